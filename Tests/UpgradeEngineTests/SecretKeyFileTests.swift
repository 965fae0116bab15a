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

    @Test("refuses a key file that is not exactly 32 bytes", arguments: [0, 1, 16, 31, 33, 64])
    func wrongSize(size: Int) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.file("key", bytes: [UInt8](repeating: 0x41, count: size), mode: 0o600)
        Self.expectError(.wrongSize, path: path, mentioning: ["\(size) bytes", "head -c 32 /dev/urandom"])
    }

    @Test("a hex or base64 text key gets a hint that the bytes must be raw, and its content is not echoed")
    func textKey() throws {
        let directory = try TemporaryDirectory()
        let hex = Self.key.hexString + "\n"
        let path = try directory.file("key", bytes: Array(hex.utf8), mode: 0o600)
        Self.expectError(.wrongSize, path: path, mentioning: ["raw bytes, not hex or base64"])
        let error = #expect(throws: SecretKeyError.self) { try SecretKeyFile.load(path: path) }
        #expect(error.map { !$0.message.contains(Self.key.hexString.prefix(16)) } == true)
    }

    @Test("a missing file says so and how to create one")
    func missing() throws {
        let directory = try TemporaryDirectory()
        Self.expectError(
            .notFound,
            path: directory.url.appendingPathComponent("absent").path,
            mentioning: ["no such file", "head -c 32 /dev/urandom > key && chmod 600 key"]
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
