import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

private actor Counter {
    var value = 0
    func increment() -> Int {
        value += 1
        return value
    }
}

private struct Refused: Error, Equatable {
    let reason: String
}

/// The thread's identity, compared by value (`pthread_t` is an integer on Linux).
private func currentThread() -> UInt {
    UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bitPattern: UInt(pthread_self()))))
}

@Suite("BlockingRunner: async work run on the calling thread")
struct BlockingRunnerTests {
    /// Runs `body` on a new thread (as the HTTP server's workers are) and waits for it.
    private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    @Test("the work, its actor calls, its child tasks and what follows a sleep all run on the calling thread")
    func staysOnCallingThread() {
        let counter = Counter()
        let (caller, seen, mayBlockInside, mayBlockAfter) = onNewThread {
            let caller = currentThread()
            let seen = BlockingRunner.run { () async -> [UInt] in
                var threads = [currentThread()]
                _ = await counter.increment()
                threads.append(currentThread())
                async let child = currentThread()
                threads.append(await child)
                try? await Task.sleep(for: .milliseconds(5))
                threads.append(currentThread())
                return threads
            }
            let inside = BlockingRunner.run { () async -> Bool in BlockingRunner.mayBlock }
            return (caller, seen, inside, BlockingRunner.mayBlock)
        }
        #expect(seen == Array(repeating: caller, count: 4))
        #expect(mayBlockInside)
        #expect(!mayBlockAfter)
    }

    @Test("an unstructured task started inside runs on Swift's pool, and awaiting it does not hang")
    func unstructuredTasksDoNotInherit() {
        let (caller, inner, innerMayBlock) = onNewThread {
            let caller = currentThread()
            let (inner, mayBlock) = BlockingRunner.run { () async -> (UInt, Bool) in
                await Task { (currentThread(), BlockingRunner.mayBlock) }.value
            }
            return (caller, inner, mayBlock)
        }
        #expect(inner != caller)
        #expect(!innerMayBlock)
    }

    @Test("a typed error comes back unchanged")
    func errorsPropagate() {
        let outcome = onNewThread { () -> Result<Int, Refused> in
            Result { () throws(Refused) -> Int in
                try BlockingRunner.run { () async throws(Refused) -> Int in
                    await Task.yield()
                    throw Refused(reason: "no")
                }
            }
        }
        #expect(outcome == .failure(Refused(reason: "no")))
    }

    @Test("many calls from many threads at once each get their own answer")
    func concurrentCallers() {
        let counter = Counter()
        let answers = Mutex<[Int]>([])
        let group = DispatchGroup()
        for index in 0..<16 {
            group.enter()
            Thread.detachNewThread {
                let answer = BlockingRunner.run { () async -> Int in
                    _ = await counter.increment()
                    try? await Task.sleep(for: .milliseconds(1))
                    return index * 10
                }
                answers.withLock { $0.append(answer) }
                group.leave()
            }
        }
        group.wait()
        #expect(answers.withLock { $0.sorted() } == (0..<16).map { $0 * 10 })
    }
}
