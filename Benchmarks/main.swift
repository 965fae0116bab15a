import Foundation
import UpgradeEngine

// Prints throughput of the engine's hot paths next to the cost of the primitives they rest on.
// Run with: swift run -c release Benchmarks

/// Runs `body` repeatedly for about `seconds` and returns operations per second.
func measure(_ seconds: Double = 1.0, _ body: () -> Void) -> Double {
    for _ in 0..<16 { body() }  // warm-up
    var iterations = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: Double = 0
    repeat {
        for _ in 0..<64 { body() }
        iterations += 64
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    } while elapsed < seconds
    return Double(iterations) / elapsed
}

func report(_ name: String, _ rate: Double, relativeTo base: (String, Double)? = nil) {
    var line = "\(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(String(format: "%12.0f", rate)) /s"
    if let (baseName, baseRate) = base {
        line += String(format: "   %.3f× %@", rate / baseRate, baseName)
    }
    print(line)
}

let key = SecureRandom.bytes(32)
let message = SecureRandom.bytes(64)
let hmacRate = measure { _ = Digest.hmac(.sha256, key: key, message: message) }
report("HMAC-SHA256 (64-byte message)", hmacRate)
try benchmarkIdentityTokens()
