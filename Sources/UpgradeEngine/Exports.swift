// The engine's API speaks in the machines' states, events and failures: whoever imports the engine
// sees them too, while UpgradeMachines itself can import nothing (docs/architecture.md §2).
@_exported import UpgradeMachines
