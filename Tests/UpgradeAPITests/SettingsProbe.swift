@testable import UpgradeAPI

/// `ServerSettings.load` in development mode over a base environment, for the settings tests: the
/// settings a few more variables give, or the problems they are refused with.
struct SettingsProbe {
    var base = ["UPGRADE_DB": "sqlite:unused.db", "UPGRADE_LISTEN": "127.0.0.1:8080"]

    func load(_ extra: [String: String]) throws -> ServerSettings {
        try ServerSettings.load(base.merging(extra) { $1 }, development: true)
    }

    /// The problems `extra` is refused with; empty when it loads.
    func problems(_ extra: [String: String]) -> [String] {
        do {
            _ = try load(extra)
            return []
        } catch {
            return (error as? ServerSettingsError)?.problems ?? ["\(error)"]
        }
    }
}
