extension MigrationReport {
    /// One kind of flow (upgrades, or password changes): its outcomes in the window in total, by entry
    /// and per day, and its funnel.
    public struct Flow: Codable, Sendable, Equatable {
        public var total: Outcomes
        /// By how the flow was entered: `silent` (the extension's call without user interface),
        /// `withUI` (its call with a user interface), `ticket` (an in-app upgrade or change with a
        /// ticket from `POST /v1/upgrade-tickets`), `unknown` (a client that did not say, and flows
        /// recorded before the entry was, docs/architecture.md §12). Every key is always present.
        public var byEntry: [String: Outcomes]
        /// Per day of the window with any step, oldest first.
        public var perDay: [Day]
        public var funnel: Funnel

        public init(total: Outcomes, byEntry: [String: Outcomes], perDay: [Day], funnel: Funnel) {
            self.total = total
            self.byEntry = byEntry
            self.perDay = perDay
            self.funnel = funnel
        }

        /// The entries, in the order a table shows them.
        public static let entries = ["silent", "withUI", "ticket", "unknown"]
    }

    /// How many flows took each step in the window. A flow counts once per step it took: one that
    /// asked for a step-up and then completed counts in `stepUpRequired` and in `completed`.
    public struct Outcomes: Codable, Sendable, Equatable {
        /// Flows whose credential (password or ticket) was checked: every flow's first step.
        public var started: Int
        /// Flows whose credential was accepted.
        public var credentialAccepted: Int
        /// Flows that asked for a second factor (`stepUpRequired`).
        public var stepUpRequired: Int
        /// Upgrades that reached Apple's sheet (`awaitingAppleCredential`); 0 for password changes.
        public var reachedApple: Int
        public var completed: Int
        /// Cancelled by the extension, by `ASExtensionError` name (`userCanceled`,
        /// `userInteractionRequired`, `failed`, `credentialIdentityNotFound`, or `unknown`).
        public var cancelled: [String: Int]
        /// Failed, by problem slug (`invalid-credentials`, `too-many-attempts`, ...).
        public var failed: [String: Int]
        public var expired: Int
        /// Ended by a newer flow of the same account.
        public var superseded: Int

        public init(
            started: Int = 0,
            credentialAccepted: Int = 0,
            stepUpRequired: Int = 0,
            reachedApple: Int = 0,
            completed: Int = 0,
            cancelled: [String: Int] = [:],
            failed: [String: Int] = [:],
            expired: Int = 0,
            superseded: Int = 0
        ) {
            self.started = started
            self.credentialAccepted = credentialAccepted
            self.stepUpRequired = stepUpRequired
            self.reachedApple = reachedApple
            self.completed = completed
            self.cancelled = cancelled
            self.failed = failed
            self.expired = expired
            self.superseded = superseded
        }
    }

    /// One day's outcomes.
    public struct Day: Codable, Sendable, Equatable {
        public var day: String
        public var outcomes: Outcomes

        public init(day: String, outcomes: Outcomes) {
            self.day = day
            self.outcomes = outcomes
        }
    }

    /// The funnel: each step's count, its rate from the step before and from the first step (nil
    /// when the step before counted none), and the median seconds from start to completion of the
    /// flows completed in the window (nil: none completed).
    public struct Funnel: Codable, Sendable, Equatable {
        public var steps: [Step]
        public var medianSecondsToComplete: Int64?

        public init(steps: [Step], medianSecondsToComplete: Int64?) {
            self.steps = steps
            self.medianSecondsToComplete = medianSecondsToComplete
        }

        public struct Step: Codable, Sendable, Equatable {
            /// `started`, `credentialAccepted`, `reachedApple` (upgrades only), `completed`.
            public var name: String
            public var count: Int
            public var rateFromPrevious: Double?
            public var rateFromStart: Double?

            public init(name: String, count: Int, rateFromPrevious: Double?, rateFromStart: Double?) {
                self.name = name
                self.count = count
                self.rateFromPrevious = rateFromPrevious
                self.rateFromStart = rateFromStart
            }
        }
    }
}
