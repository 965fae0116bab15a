import Foundation
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#endif

/// A `--hash-parameters` file (README, Importing accounts): Firebase scrypt and keyed HMAC
/// parameters, secrets included, so it must be private to its owner like the key file.
enum HashParametersFile {
    static func read(_ path: String, option: String = "--hash-parameters") throws -> [HashParameterSet] {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw UsageError("\(option): cannot read \(path): not a readable regular file")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw UsageError(
                "\(option): \(path) holds secrets and is readable by others "
                    + "(mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it"
            )
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("\(option): cannot read \(path)")
        }
        do {
            return try HashParameterSet.parseFile(Array(data))
        } catch {
            throw UsageError("\(option): \(path): \(error.message)")
        }
    }

    /// Stores the sets (each once) and says which id each kind's hashes will name.
    static func store(
        _ sets: [HashParameterSet],
        in store: any UpgradeStore,
        secrets: SecretBox
    ) throws
        -> [HashParameterSet.Kind: Int64]
    {
        let ids = try StoredHashParameters.add(sets, store: store, secrets: secrets, now: Clock.nowSeconds)
        return Dictionary(uniqueKeysWithValues: zip(sets.map(\.kind), ids))
    }
}

/// `hash-parameters add FILE`: stores the file's sets sealed (each once) and prints their ids, for
/// hashes that name them (`p=<id>`) in provisioning rows or import files.
struct HashParametersAddCommand: CLICommand {
    static let path = ["hash-parameters", "add"]
    static let summary = "store Firebase scrypt / keyed HMAC parameters sealed and print their ids"
    static let usage = "upgrade-cli hash-parameters add FILE [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        let file = try arguments.positional("FILE")
        try arguments.finish()
        let sets = try HashParametersFile.read(file, option: "FILE")
        let secrets = try SecretKeyOption.load(dev: dev)
        let store = try StoreOption.openMigrated(location)
        let ids = try HashParametersFile.store(sets, in: store, secrets: secrets)
        for set in sets {
            Console.out("\(set.kind.rawValue): p=\(ids[set.kind] ?? 0) (\(set.summary))")
        }
        return ExitCode.success
    }
}

/// `hash-parameters list`: the stored sets' ids and kinds, and with the key whether each opens;
/// never a secret.
struct HashParametersListCommand: CLICommand {
    static let path = ["hash-parameters", "list"]
    static let summary = "list the stored hash parameter sets (never their secrets)"
    static let usage = "upgrade-cli hash-parameters list [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        try arguments.finish()
        let secrets = try SecretKeyOption.loadIfConfigured(dev: dev)
        let store = try StoreOption.openMigrated(location)
        let records = try store.read { try $0.hashParameterSets() }
        guard !records.isEmpty else {
            Console.out("no hash parameter sets stored")
            return ExitCode.success
        }
        var unusable = 0
        for record in records {
            let created = ISO8601DateFormatter().string(
                from: Date(timeIntervalSince1970: TimeInterval(record.createdAt))
            )
            var line = "p=\(record.id) \(record.kind) stored \(created)"
            if let secrets {
                do {
                    line += ": " + (try HashParameterSet.open(record, with: secrets)).summary
                } catch {
                    line += ": " + error.message
                    unusable += 1
                }
            }
            Console.out(line)
        }
        return unusable == 0 ? ExitCode.success : ExitCode.failure
    }
}
