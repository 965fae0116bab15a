import Synchronization
import UpgradeEngine

/// The support console's sign-ins, held in this process's memory (docs/architecture.md, "The
/// support console"). A session is server-side state, not a signed cookie, so that signing out ends
/// it at once: the cookie only names it, and a copied cookie is worth nothing after sign-out, after
/// its lifetime, or after its token left the token file (checked on every request by the console).
/// Sessions do not survive a restart and are not shared between instances: staff sign in again,
/// which a short lifetime asks of them anyway.
///
/// The table is keyed by the SHA-256 of the session id, never the id itself: a lookup's timing can
/// tell nothing about a live id, and the ids are not kept anywhere a memory dump would show them.
final class ConsoleSessions: Sendable {
    /// One signed-in member of staff.
    struct Session: Sendable, Equatable {
        /// The admin token signed in with, as it stood in the token file (name, scopes, expiry and
        /// hash): the session lives only while the file still lists exactly this token.
        let token: AdminToken
        /// The form token every POST of this session must carry (a synchronizer token).
        let csrf: String
        let expiresAt: Int64
    }

    /// Seconds from sign-in to the end of a session, whatever is done in it: 15 minutes.
    static let lifetime: Int64 = 900
    /// More live sessions than this are refused a new one (each needs a valid admin token).
    static let capacity = 10_000

    private let table = Mutex<[[UInt8]: Session]>([:])

    /// A new session for `token` and its id (256 random bits), or nil when `capacity` sessions are live.
    func start(token: AdminToken, now: Int64) -> (id: String, session: Session)? {
        let id = SecureRandom.token(byteCount: 32)
        let session = Session(token: token, csrf: SecureRandom.token(byteCount: 32), expiresAt: now + Self.lifetime)
        let stored = table.withLock { sessions in
            if sessions.count >= Self.capacity { sessions = sessions.filter { $0.value.expiresAt > now } }
            guard sessions.count < Self.capacity else { return false }
            sessions[Digest.sha256(id)] = session
            return true
        }
        return stored ? (id, session) : nil
    }

    /// The live session `id` names, or nil; an expired one is removed.
    func session(id: String, now: Int64) -> Session? {
        let key = Digest.sha256(id)
        return table.withLock { sessions in
            guard let session = sessions[key] else { return nil }
            guard session.expiresAt > now else {
                sessions[key] = nil
                return nil
            }
            return session
        }
    }

    /// Ends the session `id` names, if any.
    func end(id: String) {
        let key = Digest.sha256(id)
        _ = table.withLock { $0.removeValue(forKey: key) }
    }

    /// How many sessions are held, expired ones included until they are next looked at.
    var count: Int { table.withLock { $0.count } }
}
