import Dispatch
import Foundation
import Synchronization
import UpgradeEngine

/// `token verify`: checks an identity token the way the server does (docs/apple-protocol.md §1.4) and prints its
/// claims, so support staff can tell why a sign-in was refused.
struct TokenVerifyCommand: CLICommand {
    static let path = ["token", "verify"]
    static let summary = "verify a Sign in with Apple identity token; print its claims or the reason"
    static let usage = """
        upgrade-cli token verify TOKEN|- --jwks FILE|URL --audience AUD[,AUD...] [--audience AUD ...] \
        [--nonce NONCE] [--now UNIX_SECONDS] [--leeway SECONDS]
          TOKEN        the identity token, or - to read it from standard input (keeps it out of the process list)
          --jwks       Apple's key set: a JSON file (the body of https://appleid.apple.com/auth/keys), or a URL
                       to fetch it from (https, or http to a loopback address such as the emulator; 5 s at most)
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

    /// The key set from a file or a URL. Every problem is one line, exit 2: the command line was
    /// fine, the key source is not.
    private static func loadKeys(_ source: String) throws -> JWKSet {
        let keys = source.contains("://") ? try fetchKeys(source) : try readKeys(source)
        for skipped in keys.skipped {
            Console.err("warning: JWKS entry ignored: \(skipped.reason)")
        }
        return keys
    }

    private static func readKeys(_ path: String) throws -> JWKSet {
        let data: Data
        do {
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
            guard size <= JWKSet.maximumJSONBytes else {
                throw CommandFailure.configuration("JWKS file \(path) is larger than \(JWKSet.maximumJSONBytes) bytes")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as CommandFailure {
            throw error
        } catch {
            throw CommandFailure.configuration(
                "cannot read JWKS file \(path): \((error as NSError).localizedDescription)"
            )
        }
        do {
            return try JWKSet(json: data)
        } catch {
            throw CommandFailure.configuration("JWKS file \(path): \(error.message)")
        }
    }

    /// One GET over the server's own Apple client (libcurl, certificates checked, no redirects,
    /// at most `JWKSet.maximumJSONBytes`), within a few seconds and without retrying: https, or
    /// plain http only to a loopback address, as for `APPLE_BASE_URL`.
    private static func fetchKeys(_ url: String) throws -> JWKSet {
        let client: AppleClient
        let path: String
        do {
            let checked = try AppleClient.BaseURL(
                url,
                setting: "--jwks",
                expected: "https://appleid.apple.com/auth/keys or a loopback http:// URL such as the emulator's"
            )
            // The origin is the client's base URL; the rest is the path it fetches.
            guard let components = URLComponents(string: checked.string), let scheme = components.scheme,
                let host = components.percentEncodedHost
            else { throw CommandFailure.configuration("--jwks \(url): not a URL") }
            let origin = "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
            path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            var configuration = AppleClient.Configuration(baseURL: try AppleClient.BaseURL(origin), credentials: nil)
            configuration.connectTimeout = fetchTimeout
            configuration.requestTimeout = fetchTimeout
            configuration.retry.maximumAttempts = 1
            client = try AppleClient(configuration: configuration)
        } catch let error as AppleClientConfigurationError {
            throw CommandFailure.configuration(error.message)
        }
        let result = waitFor { () async -> Result<AppleFetchedKeySet, AppleEndpointError> in
            do throws(AppleEndpointError) {
                return .success(try await client.fetchKeySet(path: path))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let fetched): return fetched.keys
        case .failure(let error): throw CommandFailure.configuration("--jwks \(url): \(error.message)")
        }
    }

    static let fetchTimeout: Duration = .seconds(5)

    /// Runs `body` to completion from the synchronous command (the main thread, never a thread of
    /// the cooperative pool, may block).
    private static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
