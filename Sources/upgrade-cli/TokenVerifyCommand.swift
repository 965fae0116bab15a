import Foundation
import UpgradeEngine

/// `token verify`: checks an identity token the way the server does (design §5) and prints its
/// claims, so support staff can tell why a sign-in was refused.
struct TokenVerifyCommand: CLICommand {
    static let path = ["token", "verify"]
    static let summary = "verify a Sign in with Apple identity token; print its claims or the reason"
    static let usage = """
        upgrade-cli token verify TOKEN|- --jwks FILE --audience AUD[,AUD...] [--audience AUD ...] \
        [--nonce NONCE] [--now UNIX_SECONDS] [--leeway SECONDS]
          TOKEN        the identity token, or - to read it from standard input (keeps it out of the process list)
          --jwks       Apple's key set as JSON (the body of https://appleid.apple.com/auth/keys)
          --audience   accepted client ids (bundle ids, Services ids); repeat or separate with commas
          --nonce      the nonce issued for the sign-in; the token must carry exactly this value
          --now        verification time (default: the current time)
          --leeway     clock skew tolerated on exp/iat, 0 to 600 seconds (default 60)
        exit 0 with the claims as JSON on stdout; 1 if the token is rejected; 2 for usage or configuration errors
        """

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let jwksSource = try arguments.requiredOption("--jwks")
        let audiences = try arguments.repeatedOption("--audience")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        let nonce = try arguments.option("--nonce")
        let now = try arguments.int64Option("--now") ?? Int64(Date().timeIntervalSince1970)
        let leeway = try arguments.int64Option("--leeway") ?? 60
        let tokenArgument = try arguments.positional("TOKEN")
        try arguments.finish()
        guard !audiences.isEmpty else { throw UsageError("missing required option --audience") }

        let policy: IdentityTokenPolicy
        do {
            policy = try IdentityTokenPolicy(allowedAudiences: Set(audiences), leeway: leeway)
        } catch {
            throw UsageError(error.message)
        }
        let keys = try loadKeys(jwksSource)
        let token =
            tokenArgument == "-"
            ? Console.readSecretFromStdin().trimmingCharacters(in: .whitespacesAndNewlines) : tokenArgument

        let verifier = IdentityTokenVerifier(keys: keys, policy: policy)
        do {
            let claims = try verifier.verify(token, expectedNonce: nonce, now: now)
            Console.out(claims.json.serializedString)
            return ExitCode.success
        } catch {
            throw CommandFailure("token rejected (\(error.code)): \(error.message)")
        }
    }

    private static func loadKeys(_ source: String) throws -> JWKSet {
        let lowered = source.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            throw UsageError(
                "--jwks URL is not supported yet; save the key set (e.g. curl \(source) > keys.json) and pass the file"
            )
        }
        let data: Data
        do {
            let url = URL(fileURLWithPath: source)
            let size = try FileManager.default.attributesOfItem(atPath: source)[.size] as? Int ?? 0
            guard size <= JWKSet.maximumJSONBytes else {
                throw UsageError("JWKS file \(source) is larger than \(JWKSet.maximumJSONBytes) bytes")
            }
            data = try Data(contentsOf: url)
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError("cannot read JWKS file \(source): \((error as NSError).localizedDescription)")
        }
        let keys: JWKSet
        do {
            keys = try JWKSet(json: data)
        } catch {
            throw UsageError("JWKS file \(source): \(error.message)")
        }
        for skipped in keys.skipped {
            Console.err("warning: JWKS entry ignored: \(skipped.reason)")
        }
        return keys
    }
}
