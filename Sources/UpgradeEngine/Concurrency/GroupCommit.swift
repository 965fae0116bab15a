import Foundation

/// Group commit for callers on threads that may block (a transfer batch's rows): each caller hands
/// in one item and waits for its own result, and the items waiting together are handled in one call
/// of `body`, typically one database transaction for all of them.
///
/// No thread of its own: the first caller to find no group running leads, takes up to `maxGroup`
/// waiting items (its own among them, oldest first), runs `body` with the lock released, posts the
/// results and wakes the others; a caller whose result is not yet in leads the next group. Items
/// that arrive while a group runs form the next one, so groups grow with the load and a lone
/// caller never waits for company.
final class GroupCommit<Item, Output>: @unchecked Sendable {
    private let condition = NSCondition()
    private var waiting: [(ticket: Int, item: Item)] = []
    private var done: [Int: Output] = [:]
    private var nextTicket = 0
    private var leading = false
    private let maxGroup: Int
    private let body: @Sendable ([Item]) -> [Output]

    /// `body` returns one output per item, in the items' order.
    init(maxGroup: Int, body: @escaping @Sendable ([Item]) -> [Output]) {
        self.maxGroup = max(1, maxGroup)
        self.body = body
    }

    /// Items handed in and not yet taken into a group.
    var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting.count
    }

    /// Blocks until the group that holds `item` has run; returns its output.
    func submit(_ item: Item) -> Output {
        condition.lock()
        defer { condition.unlock() }
        let ticket = nextTicket
        nextTicket += 1
        waiting.append((ticket, item))
        while true {
            if let output = done.removeValue(forKey: ticket) { return output }
            guard !leading else {
                condition.wait()
                continue
            }
            leading = true
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            condition.unlock()
            let outputs = body(group.map(\.item))
            condition.lock()
            precondition(outputs.count == group.count, "a group commit must answer every item")
            for (entry, output) in zip(group, outputs) { done[entry.ticket] = output }
            leading = false
            condition.broadcast()
        }
    }
}
