import Foundation
import UpgradeEngine

// Prints throughput of the engine's hot paths next to the cost of the primitives they rest on, as
// ratios, so figures stay comparable across machines. Run with: swift run -c release Benchmarks

/// Runs `body` repeatedly for about `seconds` and returns operations per second.
func measure(_ seconds: Double = 1.0, batch: Int = 64, _ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<min(batch, 16) { try body() }  // warm-up
    var iterations = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: Double = 0
    repeat {
        for _ in 0..<batch { try body() }
        iterations += batch
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    } while elapsed < seconds
    return Double(iterations) / elapsed
}

func report(_ name: String, _ rate: Double, relativeTo base: (name: String, rate: Double)? = nil) {
    var line = "\(name.padding(toLength: 60, withPad: " ", startingAt: 0)) \(String(format: "%12.0f", rate)) /s"
    if let base {
        line += String(format: "   %6.3f× %@", rate / base.rate, base.name)
    }
    print(line)
}

print("siwa-upgrade benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores); rates are single-threaded")

// MARK: HMAC and TOTP

let key = SecureRandom.bytes(20)
let message = SecureRandom.bytes(8)
let hmacRate = measure { _ = Digest.hmac(.sha1, key: key, message: message) }
report("HMAC-SHA1 (8-byte counter)", hmacRate)
let totpParameters = TOTPParameters.standard
let now: Int64 = 1_700_000_000
let code = TOTP.code(secret: key, parameters: totpParameters, counter: UInt64(now / 30))
let totpRate = measure {
    _ = TOTP.verify(code: code, secret: key, parameters: totpParameters, now: now, lastAcceptedStep: nil)
}
report("TOTP verification (±1 step window: 3 HMACs)", totpRate, relativeTo: ("HMAC", hmacRate))

// MARK: SQLite

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let store = try SQLiteStore(path: directory.appendingPathComponent("bench.db").path)
_ = try store.migrate(now: now)
var counter = 0
let commitRate = try measure(batch: 16) {
    counter += 1
    try store.write { tx in
        try tx.appendAudit(AuditEvent(at: now, accountID: nil, upgradeID: nil, event: "bench.\(counter)"))
    }
}
report("SQLite commit (one audit row, WAL, synchronous=NORMAL)", commitRate)

// MARK: Identity tokens

try benchmarkIdentityTokens()
