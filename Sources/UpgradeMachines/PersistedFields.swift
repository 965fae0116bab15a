/// Reads the optional fields of one stored record, remembering which ones the status used, so
/// that a field the status does not have is reported instead of silently dropped.
struct PersistedFields {
    let machine: String
    let status: String
    private var used: Set<String> = []

    init(machine: String, status: String) {
        self.machine = machine
        self.status = status
    }

    func error(_ problem: String) -> PersistedStateError {
        PersistedStateError(machine: machine, status: status, problem: problem)
    }

    mutating func require<Value>(_ value: Value?, _ name: String) throws(PersistedStateError) -> Value {
        used.insert(name)
        guard let value else { throw error("\(name) is missing") }
        return value
    }

    mutating func requireIdentifier(_ value: String?, _ name: String) throws(PersistedStateError) -> String {
        let identifier = try require(value, name)
        guard !identifier.isEmpty else { throw error("\(name) is empty") }
        return identifier
    }

    /// A field that may be absent for this status (read it, whatever it holds).
    mutating func optional<Value>(_ value: Value?, _ name: String) -> Value? {
        used.insert(name)
        return value
    }

    /// `present` lists every field of the record with whether it is non-nil.
    func rejectUnused(_ present: KeyValuePairs<String, Bool>) throws(PersistedStateError) {
        for (name, isPresent) in present where isPresent && !used.contains(name) {
            throw error("\(name) does not belong to this status")
        }
    }
}
