import Foundation
import Synchronization

/// Group commit for callers on threads that may block (a transfer batch's rows): each caller hands
/// in one item and waits for its own result, and the items waiting together are handled in one call
/// of `body`, typically one database transaction for all of them.
///
/// No thread of its own: the first caller to find no group running leads. The leader takes up to
/// `maxGroup` waiting items (its own among them, oldest first), runs `body` with the lock released,
/// and wakes the callers whose results are in, each on a semaphore of its own. While items wait,
/// the leader goes on with the next group (at most `maxRounds` groups after its own result is in),
/// since it is already running: a caller woken to lead would first have to be scheduled. Then it
/// hands the lead to the oldest waiting caller. Items that arrive while a group runs form the next
/// one, so groups grow with the load and a lone caller never waits for company.
final class GroupCommit<Item, Output>: @unchecked Sendable {
    private final class Entry {
        let item: Item
        var output: Output?
        /// Set, under the lock, when this caller is to lead.
        var leads = false
        let wake = DispatchSemaphore(value: 0)

        init(_ item: Item) { self.item = item }
    }

    private let lock = NSLock()
    private var waiting: [Entry] = []
    private var leading = false
    private let maxGroup: Int
    private let maxRounds: Int
    private let body: @Sendable ([Item]) -> [Output]

    /// `body` returns one output per item, in the items' order.
    init(maxGroup: Int, maxRounds: Int = 8, body: @escaping @Sendable ([Item]) -> [Output]) {
        self.maxGroup = max(1, maxGroup)
        self.maxRounds = max(0, maxRounds)
        self.body = body
    }

    /// Items handed in and not yet taken into a group.
    var waitingCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return waiting.count
    }

    /// Blocks until the group that holds `item` has run; returns its output.
    func submit(_ item: Item) -> Output {
        let entry = Entry(item)
        lock.lock()
        waiting.append(entry)
        if leading {
            lock.unlock()
            entry.wake.wait()
            // Woken with its output, or to lead (its item may still wait).
            lock.lock()
            if let output = entry.output, !entry.leads {
                lock.unlock()
                return output
            }
        } else {
            leading = true
        }
        // This caller leads; the lock is held.
        var rounds = 0
        while true {
            if entry.output != nil {
                rounds += 1
                if waiting.isEmpty || rounds > maxRounds {
                    if let next = waiting.first {
                        next.leads = true
                        next.wake.signal()
                    } else {
                        leading = false
                    }
                    lock.unlock()
                    return entry.output!
                }
            }
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            lock.unlock()
            let outputs = body(group.map(\.item))
            precondition(outputs.count == group.count, "a group commit must answer every item")
            lock.lock()
            for (member, output) in zip(group, outputs) {
                member.output = output
                if member !== entry { member.wake.signal() }
            }
        }
    }
}
