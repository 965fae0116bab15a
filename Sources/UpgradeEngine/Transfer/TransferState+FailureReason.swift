extension TransferState {
    /// The reason of a failed step, nil in every other state.
    var failureReason: TransferFailureReason? {
        guard case .transferFailed(let failed) = self else { return nil }
        return failed.reason
    }
}
