/// The per-client count of failed credential checks, shared by every server on the database.
extension SQLTransaction {
    func clientThrottlePaidOffAt(clientKey: String) throws(StorageError) -> Int64? {
        try rows("SELECT paid_off_at FROM client_throttle WHERE client_key = $1", [.text(clientKey)]).first?.first?.int
    }

    func setClientThrottle(clientKey: String, paidOffAt: Int64) throws(StorageError) {
        try rows(
            "INSERT INTO client_throttle (client_key, paid_off_at) VALUES ($1, $2) ON CONFLICT (client_key) DO UPDATE SET paid_off_at = excluded.paid_off_at",
            [.text(clientKey), .integer(paidOffAt)]
        )
    }

    func deletePaidClientThrottles(now: Int64) throws(StorageError) -> Int {
        try rows("DELETE FROM client_throttle WHERE paid_off_at <= $1", [.integer(now)])
        return changes
    }

    func clientsInDebt(now: Int64) throws(StorageError) -> Int {
        Int(try scalarInt("SELECT count(*) FROM client_throttle WHERE paid_off_at > $1", [.integer(now)]) ?? 0)
    }
}
