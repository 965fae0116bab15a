extension Int64 {
    /// `self + seconds`, pinned at `Int64.max` instead of trapping: deadlines are computed from a
    /// caller-supplied clock value, and a wild value must not crash the server.
    package func adding(seconds: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(seconds)
        return overflow ? (seconds > 0 ? .max : .min) : sum
    }
}
