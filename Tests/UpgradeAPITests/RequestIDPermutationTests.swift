import Testing

@testable import HTTPCore

/// `RequestIDPermutation`: request ids unique within a run and in no visible order
/// (docs/architecture.md §3.3).
@Suite("Request id permutation")
struct RequestIDPermutationTests {
    let permutation = RequestIDPermutation(keys: [
        0x9e37_79b9, 0x7f4a_7c15, 0x85eb_ca6b, 0xc2b2_ae35, 0x27d4_eb2f, 0x1656_67b1,
    ])

    @Test("every id gives back its counter, so distinct counters never share an id")
    func invertible() {
        var seen = Set<UInt64>()
        for counter in UInt64(0)..<100_000 {
            let id = permutation.id(of: counter)
            #expect(permutation.counter(of: id) == counter)
            seen.insert(id)
        }
        #expect(seen.count == 100_000)
        for counter: UInt64 in [.max, .max - 1, 1 << 32, (1 << 32) - 1, 0x8000_0000_0000_0000] {
            #expect(permutation.counter(of: permutation.id(of: counter)) == counter)
        }
    }

    @Test("consecutive counters give ids that differ in about half their bits, in no order")
    func noVisibleOrder() {
        var differingBits = 0
        var increasing = 0
        let pairs = 10_000
        for counter in UInt64(1)...UInt64(pairs) {
            let previous = permutation.id(of: counter - 1)
            let next = permutation.id(of: counter)
            differingBits += (previous ^ next).nonzeroBitCount
            if next > previous { increasing += 1 }
        }
        let meanDiffering = Double(differingBits) / Double(pairs)
        #expect(meanDiffering > 30 && meanDiffering < 34, "mean differing bits \(meanDiffering)")
        // As often up as down: a counter would be up every time.
        #expect(increasing > pairs * 45 / 100 && increasing < pairs * 55 / 100, "\(increasing) of \(pairs) up")
    }

    @Test("the same counter under other keys gives another id")
    func keyed() {
        let other = RequestIDPermutation(keys: [1, 2, 3, 4, 5, 6])
        var same = 0
        for counter in UInt64(0)..<1_000 where permutation.id(of: counter) == other.id(of: counter) {
            same += 1
        }
        #expect(same == 0)
        let first = RequestIDPermutation.random()
        let second = RequestIDPermutation.random()
        #expect(first.id(of: 1) != second.id(of: 1))
    }
}
