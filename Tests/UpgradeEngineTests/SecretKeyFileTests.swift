import Foundation
import Testing

@testable import UpgradeEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("SecretKeyFile")
struct SecretKeyFileTests {
    /// A fresh private directory per test, removed afterwards.
    final class TemporaryDirectory {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("secret-key-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        }
        deinit { try? FileManager.default.removeItem(at: url) }

        func file(_ name: String, bytes: [UInt8], mode: Int) throws -> String {
            let path = url.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    static let key = (0..<32).map { UInt8(0xa0 &+ $0) }

    static func expectError(
        _ code: SecretKeyError.Code,
        path: String,
        mentioning fragments: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: SecretKeyError.self, sourceLocation: sourceLocation) {
            try SecretKeyFile.load(path: path)
        }
        guard let error else { return }
        #expect(error.code == code, sourceLocation: sourceLocation)
        #expect(error.message.contains("UPGRADE_SECRET_KEY_FILE"), sourceLocation: sourceLocation)
        #expect(!error.message.contains("\n"), "one line", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(error.message.contains(fragment), "mentions \(fragment)", sourceLocation: sourceLocation)
        }
    }

    @Test("loads 32 raw bytes from an owner-only file", arguments: [0o600, 0o400, 0o700])
    func loads(mode: Int) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("key", bytes: Self.key, mode: mode)
        let box = try SecretKeyFile.load(path: path)
        #expect(!box.isDevelopmentOnly)
        // The loaded key is the file's bytes: it opens what a box built from them sealed.
        let sealed = try SecretBox(key: Self.key).seal([1, 2, 3], context: "c")
        #expect(try box.open(sealed, context: "c") == [1, 2, 3])
    }

    @Test("follows a symbolic link to a valid key, as mounted secrets often are")
    func symbolicLink() throws {
        let directory = try TemporaryDirectory()
        let target = try directory.file("key", bytes: Self.key, mode: 0o600)
        let link = directory.url.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        _ = try SecretKeyFile.load(path: link)
    }

    @Test(
        "refuses a key file that group or others can access",
        arguments: [0o640, 0o604, 0o644, 0o660, 0o666, 0o601, 0o610]
    )
    func permissionsTooOpen(mode: Int) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("key", bytes: Self.key, mode: mode)
        Self.expectError(.permissionsTooOpen, path: path, mentioning: ["chmod 600", String(mode, radix: 8)])
    }

    @Test(
        "refuses a binary key file that is not exactly 32 bytes, or any file beyond 64 KiB",
        arguments: [0, 1, 16, 31, 33, 64, 65_537]
    )
    func wrongSize(size: Int) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("key", bytes: [UInt8](repeating: 0xff, count: size), mode: 0o600)
        Self.expectError(.wrongSize, path: path, mentioning: ["\(size) bytes", "head -c 32 /dev/urandom | base64"])
    }

    @Test("a bare hex or base64 key gets a hint to put an id before it, and its content is not echoed")
    func textKey() throws {
        let directory = try TemporaryDirectory()
        for text in [Self.key.hexString + "\n", Data(Self.key).base64EncodedString() + "\n"] {
            let path = try directory.file("key", bytes: Array(text.utf8), mode: 0o600)
            Self.expectError(.malformed, path: path, mentioning: ["line 1", "put a key id and a space before"])
            let error = #expect(throws: SecretKeyError.self) { try SecretKeyFile.load(path: path) }
            #expect(error.map { !$0.message.contains(text.prefix(16)) } == true)
        }
    }

    static func line(_ id: String, _ key: [UInt8]) -> String { "\(id) \(Data(key).base64EncodedString())" }

    @Test("loads a keyring newest first, skipping comments and blank lines; the first key seals")
    func keyring() throws {
        let directory = try TemporaryDirectory()
        let older = [UInt8](repeating: 3, count: 32)
        let text =
            "# rotated 2026-11\n\n" + Self.line("k2", Self.key) + "\r\n\t" + Self.line("0", older) + "  \n# end\n"
        let path = try directory.file("keys", bytes: Array(text.utf8), mode: 0o600)
        let box = try SecretKeyFile.load(path: path)
        #expect(box.keyIDs == ["k2", "0"])
        #expect(SecretBox.keyID(of: box.seal([1], context: "c")) == "k2")
        let sealedUnderOlder = try SecretBox(key: older).seal([9], context: "c")
        #expect(try box.open(sealedUnderOlder, context: "c") == [9])
        let sealedUnderNewest = try SecretBox(keys: [("k2", Self.key)]).seal([8], context: "c")
        #expect(try box.open(sealedUnderNewest, context: "c") == [8])
    }

    @Test(
        "a keyring line that does not parse names the line and how to fix it, never the key",
        arguments: [
            ("k1 \(Data([UInt8](repeating: 0xa0, count: 31)).base64EncodedString())", "line 2", "exactly 32 bytes"),
            ("k1 \(Data([UInt8](repeating: 0xa0, count: 33)).base64EncodedString())", "line 2", "exactly 32 bytes"),
            ("k1 not*base64*at*all*not*base64*at*all*not*base64", "line 2", "exactly 32 bytes"),
            ("bad.id \(Data([UInt8](repeating: 0xa0, count: 32)).base64EncodedString())", "line 2", "letters, digits"),
            ("k0 \(Data([UInt8](repeating: 0xa0, count: 32)).base64EncodedString())", "line 2", "listed twice"),
            ("k1 \(Data([UInt8](repeating: 0xa0, count: 32)).base64EncodedString()) extra", "line 2", "'ID BASE64'"),
        ]
    )
    func malformedLine(line: String, place: String, hint: String) throws {
        let directory = try TemporaryDirectory()
        let text = Self.line("k0", Self.key) + "\n" + line + "\n"
        let path = try directory.file("keys", bytes: Array(text.utf8), mode: 0o600)
        Self.expectError(.malformed, path: path, mentioning: [place, hint])
        let error = #expect(throws: SecretKeyError.self) { try SecretKeyFile.load(path: path) }
        #expect(
            error.map { !$0.message.contains("oKCgoKCg") && !$0.message.contains(Data(Self.key).base64EncodedString()) }
                == true
        )
    }

    @Test("a keyring line written key first is refused without echoing any of the key")
    func swappedLine() throws {
        let directory = try TemporaryDirectory()
        // Base64 with '+' and '/' in it, as most random keys have.
        let key = (0..<32).map { UInt8(truncatingIfNeeded: 0xfb &+ $0 &* 7) }
        let encoded = Data(key).base64EncodedString()
        let text = Self.line("k0", Self.key) + "\n" + encoded + " k1\n"
        let path = try directory.file("keys", bytes: Array(text.utf8), mode: 0o600)
        Self.expectError(.malformed, path: path, mentioning: ["line 2", "letters, digits", "write the id first"])
        let error = #expect(throws: SecretKeyError.self) { try SecretKeyFile.load(path: path) }
        // No run of 8 characters of the key's text appears, whatever was replaced in it.
        let printable = String(encoded.map { $0.isLetter || $0.isNumber ? $0 : "?" })
        for start in stride(from: 0, through: encoded.count - 8, by: 4) {
            let begin = encoded.index(encoded.startIndex, offsetBy: start)
            let end = encoded.index(begin, offsetBy: 8)
            let pbegin = printable.index(printable.startIndex, offsetBy: start)
            let pend = printable.index(pbegin, offsetBy: 8)
            #expect(error.map { !$0.message.contains(encoded[begin..<end]) } == true)
            #expect(error.map { !$0.message.contains(printable[pbegin..<pend]) } == true)
        }
    }

    @Test("a keyring of comments only lists no key")
    func noKeys() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("keys", bytes: Array("# nothing yet\n\n".utf8), mode: 0o600)
        Self.expectError(.malformed, path: path, mentioning: ["lists no key"])
    }

    @Test("a keyring file must be private to its owner too")
    func keyringMode() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("keys", bytes: Array((Self.line("k1", Self.key) + "\n").utf8), mode: 0o640)
        Self.expectError(.permissionsTooOpen, path: path, mentioning: ["chmod 600"])
    }

    @Test("a missing file says so and how to create one")
    func missing() throws {
        let directory = try TemporaryDirectory()
        Self.expectError(
            .notFound,
            path: directory.url.appendingPathComponent("absent").path,
            mentioning: ["no such file", "head -c 32 /dev/urandom | base64", "chmod 600"]
        )
        Self.expectError(.notFound, path: directory.url.appendingPathComponent("absent/key").path)
    }

    @Test("a directory or a named pipe is not a key file")
    func notRegular() throws {
        let directory = try TemporaryDirectory()
        let subdirectory = directory.url.appendingPathComponent("dir").path
        try FileManager.default.createDirectory(atPath: subdirectory, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: subdirectory)
        Self.expectError(.notRegularFile, path: subdirectory, mentioning: ["not a regular file"])
        // Opening a pipe must not block waiting for a writer.
        let fifo = directory.url.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        Self.expectError(.notRegularFile, path: fifo)
    }

    @Test("the environment variable must be set and non-empty")
    func environment() throws {
        for environment in [[:], ["UPGRADE_SECRET_KEY_FILE": ""]] as [[String: String]] {
            let error = #expect(throws: SecretKeyError.self) { try SecretKeyFile.load(environment: environment) }
            #expect(error?.code == .notConfigured)
            #expect(error?.message.contains("UPGRADE_SECRET_KEY_FILE is not set") == true)
        }
        let directory = try TemporaryDirectory()
        let path = try directory.file("key", bytes: Self.key, mode: 0o600)
        _ = try SecretKeyFile.load(environment: ["UPGRADE_SECRET_KEY_FILE": path])
    }
}
