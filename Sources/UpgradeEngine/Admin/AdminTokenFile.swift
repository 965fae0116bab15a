#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The admin token file (`UPGRADE_ADMIN_TOKENS_FILE`), managed by `upgrade-cli admin tokens`. One
/// token per line, `NAME SCOPES CREATED_AT SHA256_HEX [EXPIRES_AT]` (scopes a comma list, times in
/// Unix seconds; a line without `EXPIRES_AT`, as every older file has, never expires), `#` lines
/// are comments. Like the secret key file it must be a regular file that
/// group and others cannot access: the hashes cannot be reversed, but they are nobody else's business
/// and a writable file would let anyone add a token.
public enum AdminTokenFile {
    public static let environmentVariable = "UPGRADE_ADMIN_TOKENS_FILE"
    static let header =
        "# siwa-upgrade admin tokens: NAME SCOPES CREATED_AT SHA256 [EXPIRES_AT]; managed by upgrade-cli admin tokens"

    /// Reads the tokens at `path`; a missing file is `notFound` unless `missingIsEmpty`.
    public static func load(path: String, missingIsEmpty: Bool = false) throws(AdminTokenError) -> AdminTokenSet {
        guard let text = try readText(path: path, missingIsEmpty: missingIsEmpty) else { return AdminTokenSet([]) }
        return AdminTokenSet(try parse(text, path: path))
    }

    /// Adds a token named `name` with `scopes` to the file at `path`, creating the file (mode 0600)
    /// if it does not exist, and returns the token: the only time it exists outside its holder.
    public static func add(
        name: String,
        scopes: [AdminScope],
        path: String,
        now: Int64,
        expiresAt: Int64? = nil
    ) throws(AdminTokenError) -> String {
        guard AdminToken.isValidName(name) else {
            throw AdminTokenError(
                .invalidName,
                "invalid token name '\(name)': use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        }
        guard !scopes.isEmpty else { throw AdminTokenError(.invalidScopes, "a token needs at least one scope") }
        if let expiresAt, expiresAt <= now {
            throw AdminTokenError(.invalidExpiry, "the expiry must be in the future")
        }
        var tokens = try load(path: path, missingIsEmpty: true).tokens
        guard !tokens.contains(where: { $0.name == name }) else {
            throw AdminTokenError(
                .duplicateName,
                "\(path) already has a token named '\(name)'; remove it first or choose another name"
            )
        }
        let token = AdminToken.generate()
        tokens.append(
            AdminToken(
                name: name,
                scopes: Array(Set(scopes)).sorted(),
                createdAt: now,
                expiresAt: expiresAt,
                hash: AdminToken.hash(of: token)
            )
        )
        try replace(path, with: tokens)
        return token
    }

    /// Removes the token named `name`; `unknownName` if there is none.
    public static func remove(name: String, path: String) throws(AdminTokenError) {
        var tokens = try load(path: path).tokens
        guard let index = tokens.firstIndex(where: { $0.name == name }) else {
            throw AdminTokenError(.unknownName, "\(path) has no token named '\(name)'")
        }
        tokens.remove(at: index)
        try replace(path, with: tokens)
    }

    static func parse(_ text: String, path: String) throws(AdminTokenError) -> [AdminToken] {
        var tokens: [AdminToken] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            // The line itself is never quoted: it holds a hash.
            func malformed(_ what: String) -> AdminTokenError {
                AdminTokenError(
                    .malformed,
                    "\(environmentVariable)=\(path): line \(number + 1): \(what); manage the file with upgrade-cli admin tokens"
                )
            }
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 4 || fields.count == 5 else {
                throw malformed("expected NAME SCOPES CREATED_AT SHA256 [EXPIRES_AT]")
            }
            let name = String(fields[0])
            guard AdminToken.isValidName(name) else { throw malformed("invalid name") }
            guard !tokens.contains(where: { $0.name == name }) else { throw malformed("name '\(name)' repeated") }
            let scopes: [AdminScope]
            do { scopes = try AdminScope.parseList(String(fields[1])) } catch { throw malformed(error.message) }
            guard let createdAt = Int64(fields[2]), createdAt >= 0 else { throw malformed("invalid CREATED_AT") }
            guard let hash = hexBytes(fields[3]), hash.count == 32 else { throw malformed("invalid SHA256") }
            var expiresAt: Int64?
            if fields.count == 5 {
                guard let value = Int64(fields[4]), value > 0 else { throw malformed("invalid EXPIRES_AT") }
                expiresAt = value
            }
            tokens.append(
                AdminToken(name: name, scopes: scopes, createdAt: createdAt, expiresAt: expiresAt, hash: hash)
            )
        }
        return tokens
    }

    static func render(_ tokens: [AdminToken]) -> String {
        var text = header + "\n"
        for token in tokens {
            text += "\(token.name) \(token.scopes.map(\.rawValue).joined(separator: ",")) \(token.createdAt) "
            text += token.hash.hexString
            if let expiresAt = token.expiresAt { text += " \(expiresAt)" }
            text += "\n"
        }
        return text
    }

    private static func hexBytes(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }

    /// The file's text, or nil when it is missing and `missingIsEmpty`. The checks run on the opened
    /// descriptor, so the file that is checked is the file that is read.
    private static func readText(path: String, missingIsEmpty: Bool) throws(AdminTokenError) -> String? {
        let name = "\(environmentVariable)=\(path)"
        guard !path.isEmpty else { throw AdminTokenError(.notFound, "\(environmentVariable) is empty") }
        do {
            return try OwnerOnlyFile.read(path: path, limit: 1 << 20)
        } catch {
            switch error.kind {
            case .notFound where missingIsEmpty:
                return nil
            case .notFound:
                throw AdminTokenError(
                    .notFound,
                    "\(name): no such file; create it with: upgrade-cli admin tokens add NAME --scopes tickets --file \(path)"
                )
            case .notReadable:
                throw AdminTokenError(
                    .notReadable,
                    "\(name): permission denied; the file must be readable by the user running the server (chown it, then chmod 600)"
                )
            case .notRegularFile: throw AdminTokenError(.notRegularFile, "\(name) is not a regular file")
            case .permissionsTooOpen: throw AdminTokenError(.permissionsTooOpen, "\(name) \(error.message)")
            case .tooLarge:
                throw AdminTokenError(.malformed, "\(name) is larger than 1 MiB; it is not an admin token file")
            case .notText:
                throw AdminTokenError(.malformed, "\(name) is not UTF-8 text; it is not an admin token file")
            case .ioFailed: throw AdminTokenError(.ioFailed, "\(name): \(error.message)")
            }
        }
    }

    /// Replaces the file: a new file created with mode 0600 next to it, synced, then renamed over it,
    /// so a crash leaves the old file or the new one, never half of one. Two commands editing one
    /// file at the same moment may lose one edit: run them one at a time.
    private static func replace(_ path: String, with tokens: [AdminToken]) throws(AdminTokenError) {
        let temporary = path + ".tmp-\(SecureRandom.token(byteCount: 6))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AdminTokenError(.ioFailed, "cannot create a file next to \(path): \(errorText(errno))")
        }
        let bytes = Array(render(tokens).utf8)
        var written = 0
        var failure: Int32 = 0
        // umask may only have removed bits; make the mode exact anyway.
        if fchmod(fd, 0o600) != 0 { failure = errno }
        while failure == 0 && written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno != EINTR { failure = errno }
            } else {
                written += count
            }
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw AdminTokenError(.ioFailed, "cannot write \(path): \(errorText(failure))")
        }
    }

    private static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
