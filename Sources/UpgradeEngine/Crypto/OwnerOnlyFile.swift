import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a small secret file only if it is a regular file no one but its owner may access; the
/// checks run on the opened descriptor, so the file checked is the file read. Symbolic links are
/// followed, since mounted secrets are often links. The one reader of every secret file: the
/// keyring, the admin tokens, the webhook and legacy-verification secrets and the team's `.p8`.
public enum OwnerOnlyFile {
    public struct Failure: Error, Sendable {
        /// What went wrong, for callers that word their own message or map it to their own error.
        public enum Kind: Sendable, Equatable {
            case notFound, notReadable, notRegularFile, permissionsTooOpen, tooLarge, notText, ioFailed
        }

        public let kind: Kind
        /// Without the path: "no such file", "has mode 0644; group and others must have no access:
        /// run chmod 600 on it", "is larger than N bytes", "cannot open: ...".
        public let message: String
        /// For `tooLarge`: the size `fstat` gave, or what was read when the file grew past it.
        public var size: Int64 = 0

        init(_ kind: Kind, _ message: String, size: Int64 = 0) {
            self.kind = kind
            self.message = message
            self.size = size
        }
    }

    /// The file's text (UTF-8), at most `limit` bytes.
    public static func read(path: String, limit: Int) throws(Failure) -> String {
        var bytes = try readBytes(path: path, limit: limit)
        defer { wipe(&bytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure(.notText, "is not UTF-8 text") }
        return text
    }

    /// The file's bytes, at most `limit`. Read into one buffer of `limit + 1` bytes, so a file that
    /// grew after `fstat` is caught rather than truncated and no partial copy is left in freed memory.
    public static func readBytes(path: String, limit: Int) throws(Failure) -> [UInt8] {
        guard !path.isEmpty else { throw Failure(.notFound, "the path is empty") }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw Failure(.notFound, "no such file")
            case EACCES, EPERM:
                throw Failure(
                    .notReadable,
                    "permission denied; the server's user must own it (chown it, then chmod 600)"
                )
            default: throw Failure(.ioFailed, "cannot open: \(errorText(code))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(.ioFailed, "cannot stat: \(errorText(errno))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(.notRegularFile, "is not a regular file") }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let digits = String(UInt32(mode), radix: 8)
            let octal = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
            throw Failure(
                .permissionsTooOpen,
                "has mode \(octal); group and others must have no access: run chmod 600 on it"
            )
        }
        guard info.st_size <= off_t(limit) else { throw tooLarge(limit, size: Int64(info.st_size)) }
        var contents = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < contents.count {
            let count = contents.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                wipe(&contents)
                throw Failure(.ioFailed, "read failed: \(errorText(code))")
            }
            if count == 0 { break }
            filled += count
        }
        guard filled <= limit else {
            wipe(&contents)
            throw tooLarge(limit, size: Int64(filled))
        }
        contents.removeLast(contents.count - filled)
        return contents
    }

    /// Overwrites `bytes` with zeros: what a caller does with a secret's bytes once parsed.
    public static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }

    private static func tooLarge(_ limit: Int, size: Int64) -> Failure {
        Failure(.tooLarge, "is larger than \(limit) bytes", size: size)
    }

    private static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
