/// The HTTPS client makes the same migration calls the transfer batches need.
extension AppleClient: AppleUserMigrating {}
