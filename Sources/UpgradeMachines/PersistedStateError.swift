/// A stored state record that does not describe a state the machine can be in: an unknown status
/// or stored code, a field missing for its status, or a field present that the status does not have.
/// Restoring refuses it rather than guessing, because a guessed identity-link state is worse than
/// an error an operator can investigate.
public struct PersistedStateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `upgrade` or `transfer`.
    public let machine: String
    /// The stored status, as read.
    public let status: String
    public let problem: String

    public init(machine: String, status: String, problem: String) {
        self.machine = machine
        self.status = status
        self.problem = problem
    }

    public var description: String { "cannot restore \(machine) state '\(status)': \(problem)" }
}
