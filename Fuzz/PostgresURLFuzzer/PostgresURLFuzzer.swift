// libFuzzer entry point for `PostgresConfiguration(url:)`, which reads `UPGRADE_DB` and `--db`
// (`postgres://USER:PASSWORD@HOST:PORT,.../DB?...`). Compiled with its source and `StorageError`
// only (see ../run.sh). Besides "no crash, no memory error", it checks:
// 1. An accepted URL has at least one host, no host twice, every name non-empty where it must be,
//    ports from 1 to 65535, a connect timeout from 1 to 3600 s, no control character in a host
//    (messages name it), and no NUL in anything libpq is handed (its keyword values are C strings).
// 2. The description reads back as the same configuration with `(redacted)` for the password:
//    nothing lost (a socket directory's port, an IPv6 zone), and the password nowhere in it.
// 3. A refused URL's message is one line that never quotes what comes before the last '@' (the
//    user information, where the password is).

import Foundation

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func hasControl(_ text: String) -> Bool {
    text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
}

/// Whether `haystack` holds `needle`, byte for byte. Not Foundation's `contains(_:)`: on Linux it
/// treats NUL as ignorable (`"\0".contains("\0\0")` is true) and traps on some mixes of NUL and
/// U+FFFD, as this harness found (docs/architecture.md §12).
func holds(_ haystack: some StringProtocol, _ needle: some StringProtocol) -> Bool {
    Array(haystack.utf8).firstRange(of: Array(needle.utf8)) != nil
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let configuration: PostgresConfiguration
    do {
        configuration = try PostgresConfiguration(url: text)
    } catch {
        // 3.
        require(error.code == .configuration, "a refusal that is not a configuration error: \(text)")
        require(!error.message.contains("\n"), "a message of more than one line: \(error.message)")
        let body = text.drop { $0 != "/" }.dropFirst(2)
        if let at = body.lastIndex(of: "@") {
            let userInfo = body[..<at]
            let after = body[body.index(after: at)...]
            // Only where a quote could not be a coincidence: the fixed text of the messages is made
            // of letters, digits, spaces and a little punctuation, and only the query's names are
            // quoted.
            let fixed = Set(" %:/@().,'-_?#[]=".utf8)
            let distinct = userInfo.utf8.contains {
                !fixed.contains($0) && !($0 < 0x80 && Character(Unicode.Scalar($0)).isLetter)
                    && !(0x30...0x39).contains($0)
            }
            if userInfo.utf8.count >= 4, distinct, !holds(after, userInfo) {
                require(!holds(error.message, userInfo), "a message quotes the user information: \(error.message)")
            }
        }
        return 0
    }
    // 1.
    require(!configuration.hosts.isEmpty, "no host: \(text)")
    require(Set(configuration.hosts).count == configuration.hosts.count, "a host twice: \(text)")
    for host in configuration.hosts {
        require(!host.name.isEmpty && !hasControl(host.name), "host \(host.name.debugDescription): \(text)")
        require((1...65535).contains(host.port), "port \(host.port): \(text)")
    }
    require((1...3600).contains(configuration.connectTimeout), "timeout \(configuration.connectTimeout): \(text)")
    require(!configuration.database.isEmpty, "no database: \(text)")
    for value in configuration.connectionParameters().map(\.1) {
        require(!value.utf8.contains(0), "a NUL for libpq in \(value.debugDescription): \(text)")
    }
    // 2.
    let description = configuration.description
    var expected = configuration
    if expected.password != nil { expected.password = "(redacted)" }
    guard let again = try? PostgresConfiguration(url: description) else {
        fatalError("invariant broken: the description \(description) of \(text) does not read back")
    }
    require(again == expected, "\(text) reads back from \(description) as \(again)")
    require(configuration.description == String(reflecting: configuration), "the debug description differs: \(text)")
    return 0
}
