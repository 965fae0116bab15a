// Handlers, requests and responses are the API's vocabulary: whoever imports UpgradeAPI sees the HTTP
// server too, while HTTPCore itself cannot import the engine (docs/architecture.md §2).
@_exported import HTTPCore
