#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads the key that encrypts secrets at rest (`UPGRADE_SECRET_KEY_FILE`): exactly 32 raw random
/// bytes in a regular file that only its owner may access.
public enum SecretKeyFile {
    public static let environmentVariable = "UPGRADE_SECRET_KEY_FILE"
    /// How to make a valid key file; every error repeats it.
    public static let howToCreate = "create one with: head -c 32 /dev/urandom > key && chmod 600 key"

    /// Loads the file named by `UPGRADE_SECRET_KEY_FILE` in `environment`.
    public static func load(environment: [String: String]) throws(SecretKeyError) -> SecretBox {
        guard let path = environment[environmentVariable], !path.isEmpty else {
            throw SecretKeyError(
                .notConfigured,
                "\(environmentVariable) is not set; it must name a file of 32 random bytes (\(howToCreate))"
            )
        }
        return try load(path: path)
    }

    /// Loads the key at `path`. The checks run on the opened descriptor, so the file that is checked is
    /// the file that is read. Symbolic links are followed, since mounted secrets are often links.
    public static func load(path: String) throws(SecretKeyError) -> SecretBox {
        let name = "\(environmentVariable)=\(path)"
        guard !path.isEmpty else {
            throw SecretKeyError(.notConfigured, "\(environmentVariable) is empty; \(howToCreate)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR:
                throw SecretKeyError(.notFound, "\(name): no such file; \(howToCreate)")
            case EACCES, EPERM:
                throw SecretKeyError(
                    .notReadable,
                    "\(name): permission denied; the file must be readable by the user running the server "
                        + "(chown it to that user, then chmod 600)"
                )
            default:
                throw SecretKeyError(.readFailed, "\(name): cannot open: \(errorText(code))")
            }
        }
        defer { close(fd) }

        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw SecretKeyError(.readFailed, "\(name): cannot stat: \(errorText(errno))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw SecretKeyError(.notRegularFile, "\(name) is not a regular file; \(howToCreate)")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw SecretKeyError(
                .permissionsTooOpen,
                "\(name) has mode \(octal(mode)); group and others must have no access: run chmod 600 on it"
            )
        }
        guard info.st_size == off_t(SecretBox.keyLength) else {
            throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: Int64(info.st_size)))
        }

        // One byte more than needed, so a file that grew after fstat is caught rather than truncated.
        var key = [UInt8](repeating: 0, count: SecretBox.keyLength + 1)
        var filled = 0
        while filled < key.count {
            let result = key.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw SecretKeyError(.readFailed, "\(name): read failed: \(errorText(errno))")
            }
            if result == 0 { break }
            filled += result
        }
        guard filled == SecretBox.keyLength else {
            throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: Int64(filled)))
        }
        key.removeLast()
        do {
            return try SecretBox(key: key)
        } catch {
            // Unreachable: the length was checked above. Kept typed rather than forced.
            throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: Int64(key.count)))
        }
    }

    private static func sizeMessage(name: String, size: Int64) -> String {
        // 44/45 and 64/65 bytes are what base64 and hex encodings of 32 bytes look like (with a newline).
        var hint = ""
        if [43, 44, 45, 64, 65].contains(size) {
            hint = " (it looks like text; the file must hold the raw bytes, not hex or base64)"
        }
        return "\(name) is \(size) bytes; it must be exactly 32 raw random bytes\(hint); \(howToCreate)"
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(UInt32(mode), radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
