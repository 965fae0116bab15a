/// Why a state machine refused an event. Nothing changed: the caller answers with the error and
/// persists nothing. Shared by ``UpgradeStateMachine``, ``TransferStateMachine`` and
/// ``PasswordChangeStateMachine``.
public struct TransitionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal this is. A struct over a private enum so that codes can be added
    /// without breaking callers that switch on the ones they know.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case notAllowed = "not-allowed-in-state"
            case conflict = "conflict"
            case deadlineNotReached = "deadline-not-reached"
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The event has no transition from the current state (including every change to a
        /// terminal state).
        public static let notAllowed = Code(.notAllowed)
        /// The event repeats a step that already happened, but with different data (another Apple
        /// `sub`, another `transfer_sub`). Answering it as a replay would be a lie, and applying it
        /// would overwrite an identity link, so it is refused.
        public static let conflict = Code(.conflict)
        /// `deadlinePassed` arrived before the state's deadline; the sweeper that sent it read a
        /// stale clock or a stale record.
        public static let deadlineNotReached = Code(.deadlineNotReached)

        /// Stable name.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The stable `status` of the state that refused the event.
    public let state: String
    /// The stable name of the refused event.
    public let event: String
    /// What went wrong and what to do about it. Never contains a secret: events carry none.
    public let message: String

    public init(code: Code, state: String, event: String, message: String) {
        self.code = code
        self.state = state
        self.event = event
        self.message = message
    }

    /// The event has no transition from `state`.
    public static func notAllowed(state: String, event: String) -> TransitionError {
        TransitionError(
            code: .notAllowed,
            state: state,
            event: event,
            message: "'\(event)' is not allowed in state '\(state)'; read the current status before retrying"
        )
    }

    public var description: String { message }
}
