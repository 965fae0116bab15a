import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

@Suite("GroupCommit: items waiting together are handled in one call")
struct GroupCommitTests {
    /// Runs `body` on a thread of its own, as a transfer batch's rows run.
    private func onNewThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done
    }

    /// Polls `condition` every millisecond for at most 10 s.
    private func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    @Test("a lone item is handled at once, in a group of its own")
    func loneItem() {
        let groups = Mutex<[[Int]]>([])
        let commit = GroupCommit<Int, String>(maxGroup: 8) { items in
            groups.withLock { $0.append(items) }
            return items.map { "done \($0)" }
        }
        #expect(commit.submit(7) == "done 7")
        #expect(commit.submit(8) == "done 8")
        #expect(groups.withLock { $0 } == [[7], [8]])
    }

    @Test("items that arrive while a group runs form the next group, at most maxGroup at a time")
    func arrivalsWaitForTheNextGroup() {
        let groups = Mutex<[[Int]]>([])
        let firstStarted = DispatchSemaphore(value: 0)
        let releaseFirst = DispatchSemaphore(value: 0)
        let commit = GroupCommit<Int, Int>(maxGroup: 3) { items in
            let isFirst = groups.withLock { groups in
                groups.append(items)
                return groups.count == 1
            }
            if isFirst {
                firstStarted.signal()
                _ = releaseFirst.wait(timeout: .now() + 10)
            }
            return items.map { $0 * 10 }
        }
        let outputs = Mutex<[Int: Int]>([:])
        var finished = [
            onNewThread {
                let output = commit.submit(0)
                outputs.withLock { $0[0] = output }
            }
        ]
        #expect(firstStarted.wait(timeout: .now() + 10) == .success)
        for item in 1...4 {
            finished.append(
                onNewThread {
                    let output = commit.submit(item)
                    outputs.withLock { $0[item] = output }
                }
            )
        }
        #expect(eventually { commit.waitingCount == 4 }, "the four later items wait while the first group runs")
        releaseFirst.signal()
        for done in finished { #expect(done.wait(timeout: .now() + 10) == .success) }

        let seen = groups.withLock { $0 }
        #expect(seen.map(\.count) == [1, 3, 1], "\(seen)")
        #expect(seen.flatMap { $0 }.sorted() == [0, 1, 2, 3, 4], "every item handled once")
        #expect(outputs.withLock { $0 } == [0: 0, 1: 10, 2: 20, 3: 30, 4: 40], "each caller gets its own output")
        #expect(commit.waitingCount == 0)
    }

    @Test(
        "many callers at once: each gets its own output, every item is handled exactly once",
        arguments: [0, 1, 8]
    )
    func manyCallers(maxRounds: Int) {
        let handled = Mutex<[Int]>([])
        let largest = Mutex(0)
        // maxRounds 0: every leader hands the lead on as soon as its own result is in.
        let commit = GroupCommit<Int, Int>(maxGroup: 5, maxRounds: maxRounds) { items in
            handled.withLock { $0 += items }
            largest.withLock { $0 = max($0, items.count) }
            return items.map { -$0 }
        }
        let wrong = Mutex(0)
        let threads = 8
        let perThread = 100
        let finished = (0..<threads).map { thread in
            onNewThread {
                for index in 0..<perThread {
                    let item = thread * perThread + index
                    if commit.submit(item) != -item { wrong.withLock { $0 += 1 } }
                }
            }
        }
        for done in finished { #expect(done.wait(timeout: .now() + 30) == .success) }
        #expect(wrong.withLock { $0 } == 0)
        #expect(handled.withLock { $0 }.sorted() == Array(0..<(threads * perThread)))
        #expect(largest.withLock { $0 } <= 5)
    }
}
