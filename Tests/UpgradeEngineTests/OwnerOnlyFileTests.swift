import Foundation
import Testing

@testable import UpgradeEngine

/// The one reader of secret files (`OwnerOnlyFile`): what it refuses, each with its kind and a
/// message without the path, and what it reads.
@Suite("Owner-only secret files")
struct OwnerOnlyFileTests {
    final class Directory {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("owner-only-\(UUID().uuidString)")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }

        func file(_ name: String, _ bytes: [UInt8], mode: Int = 0o600) throws -> String {
            let path = url.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    /// The failure `read` throws, or nil (also when it throws something else, which a test then sees).
    static func failure(_ read: () throws -> Void) -> OwnerOnlyFile.Failure? {
        do {
            try read()
            return nil
        } catch {
            return error as? OwnerOnlyFile.Failure
        }
    }

    @Test("a missing file, a directory and a file group or others may read are refused by kind, naming the fix")
    func refusals() throws {
        let dir = try Directory()
        let missing = Self.failure { _ = try OwnerOnlyFile.readBytes(path: dir.url.path + "/none", limit: 10) }
        #expect(missing?.kind == .notFound && missing?.message == "no such file")
        let directory = Self.failure { _ = try OwnerOnlyFile.readBytes(path: dir.url.path, limit: 10) }
        #expect(directory?.kind == .notRegularFile && directory?.message == "is not a regular file")
        for mode in [0o640, 0o604, 0o660, 0o777] {
            let path = try dir.file("open-\(mode)", Array("secret".utf8), mode: mode)
            let open = Self.failure { _ = try OwnerOnlyFile.readBytes(path: path, limit: 10) }
            let octal = "0" + String(mode, radix: 8)
            #expect(open?.kind == .permissionsTooOpen, "\(octal)")
            #expect(
                open?.message == "has mode \(octal); group and others must have no access: run chmod 600 on it"
            )
            #expect(open?.message.contains("secret") == false)
        }
    }

    @Test("up to the limit is read whole; one byte more is too large, with the size; text must be UTF-8")
    func sizesAndText() throws {
        let dir = try Directory()
        let exact = try dir.file("exact", [UInt8](repeating: 0xff, count: 32))
        #expect(try OwnerOnlyFile.readBytes(path: exact, limit: 32) == [UInt8](repeating: 0xff, count: 32))
        let over = Self.failure { _ = try OwnerOnlyFile.readBytes(path: exact, limit: 31) }
        #expect(over?.kind == .tooLarge && over?.size == 32 && over?.message == "is larger than 31 bytes")
        let notText = Self.failure { _ = try OwnerOnlyFile.read(path: exact, limit: 32) }
        #expect(notText?.kind == .notText)
        let empty = try dir.file("empty", [])
        #expect(try OwnerOnlyFile.readBytes(path: empty, limit: 8).isEmpty)
        let text = try dir.file("text", Array("k1 whsec_abc\n".utf8), mode: 0o400)
        #expect(try OwnerOnlyFile.read(path: text, limit: 64) == "k1 whsec_abc\n")
    }

    @Test("a symbolic link is followed, and the file it names is the one checked")
    func symbolicLink() throws {
        let dir = try Directory()
        let target = try dir.file("target", Array("secret".utf8))
        let link = dir.url.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try OwnerOnlyFile.read(path: link, limit: 64) == "secret")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target)
        let open = Self.failure { _ = try OwnerOnlyFile.readBytes(path: link, limit: 64) }
        #expect(open?.kind == .permissionsTooOpen)
    }

    @Test("wipe overwrites every byte with zero")
    func wipe() {
        var bytes: [UInt8] = [1, 2, 3, 255]
        OwnerOnlyFile.wipe(&bytes)
        #expect(bytes == [0, 0, 0, 0])
    }
}
