import Synchronization

/// One event loop's counters. Only that loop's threads write them, under its ownership (relaxed
/// atomics; any thread may read them for `HTTPServer.statistics`).
final class LoopCounters: Sendable {
    let accepted = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let refusedPerClient = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let busy = Atomic<Int>(0)
    let handledByLoopThreads = Atomic<Int>(0)
    let malformed = Atomic<Int>(0)
    let timedOut = Atomic<Int>(0)
    let closedBeforeFirstByte = Atomic<Int>(0)
    let bytesRead = Atomic<Int>(0)

    @inline(__always)
    static func increment(_ counter: borrowing Atomic<Int>, by amount: Int = 1) {
        counter.wrappingAdd(amount, ordering: .relaxed)
    }
}
