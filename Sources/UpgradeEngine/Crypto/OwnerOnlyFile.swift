import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a small secret file only if it is a regular file no one but its owner may access; the
/// checks run on the opened descriptor, so the file checked is the file read.
public enum OwnerOnlyFile {
    public struct Failure: Error, Sendable {
        public let message: String
    }

    public static func read(path: String, limit: Int) throws(Failure) -> String {
        guard !path.isEmpty else { throw Failure(message: "the path is empty") }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw Failure(message: "no such file")
            case EACCES, EPERM:
                throw Failure(message: "permission denied; the server's user must own it (chown it, then chmod 600)")
            default: throw Failure(message: "cannot open: \(errorText(code))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(message: "cannot stat: \(errorText(errno))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(message: "is not a regular file") }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let digits = String(UInt32(mode), radix: 8)
            let octal = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
            throw Failure(message: "has mode \(octal); group and others must have no access: run chmod 600 on it")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(message: "read failed: \(errorText(errno))")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        guard bytes.count <= limit else { throw Failure(message: "is larger than \(limit) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure(message: "is not UTF-8 text") }
        return text
    }

    private static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
