/// The per-client count of failed credential checks, shared by every server on the database: one
/// value per client key, when its debt of failures is paid off (Unix milliseconds). What the value
/// means and how it moves is `ClientThrottlePolicy`'s; the store only keeps it.
public protocol ClientThrottleStore {
    func clientThrottlePaidOffAt(clientKey: String) throws(StorageError) -> Int64?
    func setClientThrottle(clientKey: String, paidOffAt: Int64) throws(StorageError)
    /// Deletes the rows whose debt is paid by `now` (milliseconds); returns how many.
    @discardableResult
    func deletePaidClientThrottles(now: Int64) throws(StorageError) -> Int
    /// Clients still in debt at `now` (milliseconds), for a gauge.
    func clientsInDebt(now: Int64) throws(StorageError) -> Int
}
