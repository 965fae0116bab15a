import UpgradeEngine

/// `password verify --hash HASH`, password on stdin: exit 0 if it matches, 1 if not, 2 if the hash
/// format is unknown, malformed or its cost out of bounds (checked before any hashing). A Firebase
/// scrypt or keyed HMAC hash is given in import form (without `p=`) with `--hash-parameters FILE`.
struct PasswordVerifyCommand: CLICommand {
    static let path = ["password", "verify"]
    static let summary = "check a password (stdin) against a stored hash: 0 match, 1 no match, 2 bad hash"
    static let usage =
        "upgrade-cli password verify --hash HASH [--hash-parameters FILE]   (password on standard input)"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let hash = try arguments.requiredOption("--hash")
        let parametersPath = try arguments.option("--hash-parameters")
        try arguments.finish()
        var verifier = PasswordVerifier()
        if let parametersPath {
            verifier.parameterSets = HashParameterSets(given: try HashParametersFile.read(parametersPath))
        }
        // Inspect first: a bad hash is a usage error whatever the password, and costs no hashing.
        let inspection: PasswordHashInspection
        do {
            inspection = try verifier.inspect(hash)
        } catch {
            throw UsageError("--hash: \(error.message)")
        }
        let password = Console.readSecretFromStdin()
        do {
            if try verifier.verify(password: password, encodedHash: hash) {
                Console.out("match (\(inspection.format.rawValue), \(inspection.costDescription))")
                return ExitCode.success
            }
        } catch  where error.code == .invalidPassword {
            throw CommandFailure("no match: \(error.message)")
        } catch {
            throw UsageError("--hash: \(error.message)")
        }
        throw CommandFailure("no match (\(inspection.format.rawValue))")
    }
}
