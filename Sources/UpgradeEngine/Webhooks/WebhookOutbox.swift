import Foundation
import Synchronization

/// The event types sent to the app's backend, with the `data` fields of each in Schema/webhooks.md.
/// Raw values never change: the backend dispatches on them.
public enum WebhookEventType: String, Sendable, CaseIterable {
    case accountConverted = "account.converted"
    case accountProfileFilled = "account.profile-filled"
    case upgradeFailed = "upgrade.failed"
    case passwordChanged = "password.changed"
    case accountDeleted = "account.deleted"
    case appleConsentRevoked = "apple.consent-revoked"
    case appleAccountDeleted = "apple.account-deleted"
    case appleEmailChanged = "apple.email-changed"
    case transferPrepared = "transfer.prepared"
    case transferCompleted = "transfer.completed"
}

/// Writes webhook events into the outbox, inside the write transaction of the change they tell of,
/// so an event exists exactly when its change committed. Rows are written whether or not this
/// process sends webhooks: changes made by the CLI are delivered by `serve`, and an outbox written
/// before webhooks were configured is delivered once they are (Schema/webhooks.md).
///
/// The payload is the complete JSON body, `{"type", "timestamp", "data"}`, built here and sent as
/// is on every attempt. Its fields are ids, names and addresses; never a token, code or hash.
public enum WebhookOutbox {
    /// Inserts one event; returns its `webhook-id`. A transaction that runs again draws a new id,
    /// which is fine: only the last run commits.
    @discardableResult
    public static func enqueue(
        _ type: WebhookEventType,
        accountID: String?,
        data: [(String, JSONValue)],
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) -> String {
        let record = event(type, accountID: accountID, data: data, now: now)
        try tx.insertWebhookEvent(record)
        return record.id
    }

    /// The outbox row of one event, with its id and complete payload, to insert later in the
    /// transaction of its change (a transfer batch builds it on the row's thread, outside the
    /// group's transaction).
    static func event(
        _ type: WebhookEventType,
        accountID: String?,
        data: [(String, JSONValue)],
        now: Int64
    ) -> WebhookEventRecord {
        WebhookEventRecord(
            id: newID(now: now),
            accountID: accountID,
            type: type.rawValue,
            payload: body(type: type, data: data, now: now),
            createdAt: now,
            nextAttemptAt: now
        )
    }

    static func body(type: WebhookEventType, data: [(String, JSONValue)], now: Int64) -> String {
        let members = data.map { JSONValue.Member($0.0, $0.1) }
        return JSONValue.object([
            "type": .string(type.rawValue), "timestamp": .string(timestamp(now)), "data": .object(members),
        ]).serializedString
    }

    /// RFC 3339 in UTC, seconds.
    static func timestamp(_ seconds: Int64) -> String {
        RFC3339.utc(seconds: seconds)
    }

    /// `msg_`, then `now` (5 bytes) and this process's event counter (3 bytes) big-endian in
    /// lowercase hex, then 10 random bytes in base64url. The outbox is keyed by id, so ids that sort
    /// in the order they were made append to its key's last page instead of rewriting a page at
    /// random for every event (hex, unlike base64url, sorts as its bytes do); uniqueness rests on
    /// the 80 random bits.
    static func newID(now: Int64) -> String {
        let count = eventCounter.add(1, ordering: .relaxed).oldValue & 0xff_ffff
        let prefix = UInt64(max(0, now)) << 24 | count
        let hex = String(prefix, radix: 16)
        return "msg_" + String(repeating: "0", count: max(0, 16 - hex.count)) + hex
            + Base64URL.encode(SecureRandom.bytes(10))
    }

    private static let eventCounter = Atomic<UInt64>(0)
}
