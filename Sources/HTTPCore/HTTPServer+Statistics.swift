extension HTTPServer {
    /// Counters since start, summed over the event loops (each value is read atomically, the set is not).
    public struct Statistics: Hashable, Sendable {
        public var connectionsAccepted = 0
        public var connectionsOpen = 0
        /// Refused at `maxConnections`.
        public var connectionsRefused = 0
        /// Refused at `maxConnectionsPerClient`.
        public var connectionsRefusedPerClient = 0
        public var requestsReceived = 0
        /// Answered 503 because the oldest request waiting for a worker had waited longer than
        /// `maxQueueDelay`, or the queue was at `workerQueueCapacity`.
        public var requestsRefusedBusy = 0
        /// Handled by the event loop thread that read them, with no worker woken
        /// (see `Configuration.threadsPerEventLoop`).
        public var requestsHandledByLoopThreads = 0
        /// Malformed requests answered 4xx/5xx and closed.
        public var requestsMalformed = 0
        /// Requests not fully received within `requestTimeout` (408).
        public var requestsTimedOut = 0
        /// Connections closed for sending nothing within `firstByteTimeout`.
        public var connectionsClosedBeforeFirstByte = 0
        /// Bytes read from clients, including bytes drained and dropped while lingering.
        public var bytesRead = 0
        /// Requests waiting for a worker at the time of reading.
        public var queuedRequests = 0
        /// How long the oldest of them has waited at the time of reading (zero when none waits).
        public var oldestQueuedWait: Duration = .zero
        /// Requests a worker took from the queue, the sum of their waits in it, and the longest wait.
        public var requestsDequeued = 0
        public var queueWaitTotal: Duration = .zero
        public var queueWaitMaximum: Duration = .zero

        public init() {}
    }
}
