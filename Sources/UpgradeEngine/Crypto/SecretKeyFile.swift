import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads the keys that seal secrets at rest (`UPGRADE_SECRET_KEY_FILE`), from a regular file that
/// only its owner may access, in one of two forms:
/// - exactly 32 raw random bytes: one key, with id `0` (the form before keyrings);
/// - a keyring: text, one key a line as `ID BASE64` (an id of 1-32 letters, digits, `-` or `_`, then
///   base64 of exactly 32 random bytes), newest first; blank lines and lines starting with `#` are
///   skipped. New values are sealed under the first key; any listed key opens what it sealed.
public enum SecretKeyFile {
    public static let environmentVariable = "UPGRADE_SECRET_KEY_FILE"
    /// How to make a valid key file; every error repeats it.
    public static let howToCreate =
        "create one with: printf '%s %s\\n' k1 \"$(head -c 32 /dev/urandom | base64)\" > keys && chmod 600 keys"
    /// A keyring is a few lines; anything much larger is not one.
    static let maximumSize = 64 * 1024

    /// Loads the file named by `UPGRADE_SECRET_KEY_FILE` in `environment`.
    public static func load(environment: [String: String]) throws(SecretKeyError) -> SecretBox {
        guard let path = environment[environmentVariable], !path.isEmpty else {
            throw SecretKeyError(
                .notConfigured,
                "\(environmentVariable) is not set; it must name a keyring file (\(howToCreate))"
            )
        }
        return try load(path: path)
    }

    /// Loads the keys at `path`. The checks run on the opened descriptor, so the file that is checked
    /// is the file that is read. Symbolic links are followed, since mounted secrets are often links.
    public static func load(path: String) throws(SecretKeyError) -> SecretBox {
        let name = "\(environmentVariable)=\(path)"
        guard !path.isEmpty else {
            throw SecretKeyError(.notConfigured, "\(environmentVariable) is empty; \(howToCreate)")
        }
        var contents: [UInt8]
        do {
            contents = try OwnerOnlyFile.readBytes(path: path, limit: maximumSize)
        } catch {
            switch error.kind {
            case .notFound: throw SecretKeyError(.notFound, "\(name): no such file; \(howToCreate)")
            case .notReadable:
                throw SecretKeyError(
                    .notReadable,
                    "\(name): permission denied; the file must be readable by the user running the server "
                        + "(chown it to that user, then chmod 600)"
                )
            case .notRegularFile:
                throw SecretKeyError(.notRegularFile, "\(name) is not a regular file; \(howToCreate)")
            case .permissionsTooOpen: throw SecretKeyError(.permissionsTooOpen, "\(name) \(error.message)")
            case .tooLarge: throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: error.size))
            case .notText, .ioFailed: throw SecretKeyError(.readFailed, "\(name): \(error.message)")
            }
        }
        guard !contents.isEmpty else { throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: 0)) }
        defer { OwnerOnlyFile.wipe(&contents) }
        let keys: [(id: String, key: [UInt8])]
        if contents.count == SecretBox.keyLength {
            keys = [(id: SecretBox.legacyKeyID, key: contents)]
        } else {
            keys = try parseKeyring(contents, name: name)
        }
        do {
            return try SecretBox(keys: keys)
        } catch {
            // Unreachable: the parser checked ids, uniqueness and lengths. Kept typed rather than forced.
            throw SecretKeyError(.malformed, "\(name): \(error.message); \(howToCreate)")
        }
    }

    /// The keys of a keyring file's text, newest first. Errors name the line, never its key.
    static func parseKeyring(_ contents: [UInt8], name: String) throws(SecretKeyError) -> [(id: String, key: [UInt8])] {
        guard String(validating: contents, as: UTF8.self) != nil else {
            throw SecretKeyError(.wrongSize, sizeMessage(name: name, size: Int64(contents.count)))
        }
        var keys: [(id: String, key: [UInt8])] = []
        var lines = 0
        // Split on the byte: as a Swift string, "\r\n" is one character and would not split on "\n".
        for (index, bytes) in contents.split(separator: 0x0a, omittingEmptySubsequences: false).enumerated() {
            let rawLine = String(decoding: bytes, as: UTF8.self)
            let place = "\(name) line \(index + 1)"
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            lines = index + 1
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else {
                var hint = ""
                if fields.count == 1 && keys.isEmpty && [43, 44, 64].contains(fields[0].utf8.count) {
                    hint = " (it looks like a bare base64 or hex key: put a key id and a space before the base64)"
                }
                throw SecretKeyError(
                    .malformed,
                    "\(place): expected 'ID BASE64' (a key id, a space, base64 of 32 random bytes), "
                        + "found \(fields.count) field(s)\(hint); \(howToCreate)"
                )
            }
            let id = String(fields[0])
            guard SecretBox.isValidKeyID(id) else {
                // The field is not quoted: a line written key first puts the key in it.
                let swapped =
                    SecretBox.isValidKeyID(String(fields[1]))
                    ? " (it looks like 'BASE64 ID': write the id first, then the base64)" : ""
                throw SecretKeyError(
                    .malformed,
                    "\(place): the key id (the first field) must be 1-32 letters, digits, '-' or '_'\(swapped); "
                        + "rename it (the id is stored with every value it seals)"
                )
            }
            guard !keys.contains(where: { $0.id == id }) else {
                throw SecretKeyError(
                    .malformed,
                    "\(place): key id '\(id)' is listed twice; each key needs an id of its own"
                )
            }
            guard let decoded = Data(base64Encoded: String(fields[1])), case let key = [UInt8](decoded),
                key.count == SecretBox.keyLength
            else {
                throw SecretKeyError(
                    .malformed,
                    "\(place): the key of '\(id)' is not base64 of exactly 32 bytes; "
                        + "make one with: head -c 32 /dev/urandom | base64"
                )
            }
            keys.append((id: id, key: key))
        }
        guard !keys.isEmpty else {
            throw SecretKeyError(
                .malformed,
                "\(name) lists no key (\(lines) line(s), all blank or comments); \(howToCreate)"
            )
        }
        return keys
    }

    static func sizeMessage(name: String, size: Int64) -> String {
        "\(name) is \(size) bytes and not a keyring; it must be a keyring (lines of 'ID BASE64') "
            + "or exactly 32 raw random bytes; \(howToCreate)"
    }
}
