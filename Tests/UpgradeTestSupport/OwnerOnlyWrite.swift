import Foundation

/// Writes a secret file as an operator must (mode 0600: the server refuses a key, keyring or token
/// file that group or others may read), replacing what is at `path`.
public func writeOwnerOnly(_ text: String, to path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
}
