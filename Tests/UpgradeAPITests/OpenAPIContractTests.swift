import Foundation
import Testing
import UpgradeEngine
import UpgradeTestSupport

@testable import HTTPCore
@testable import UpgradeAPI

/// `Schema/openapi.yaml` and the server agree: the router lists the same operations, and every
/// problem slug the server can send is documented (and nothing else), so the document clients rely
/// on cannot drift from what the server serves.
@Suite("OpenAPI contract")
struct OpenAPIContractTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let specURL = root.appendingPathComponent("Schema/openapi.yaml")

    /// `METHOD /path` for every operation under `paths:` (two-space path keys, four-space methods).
    static func specOperations() throws -> Set<String> {
        let text = try String(contentsOf: specURL, encoding: .utf8)
        var operations = Set<String>()
        var inPaths = false
        var currentPath: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("paths:") {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.hasPrefix(" "), !line.isEmpty { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if let path = currentPath, line.hasPrefix("    "), !line.hasPrefix("     ") {
                let key = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "post", "put", "patch", "delete"].contains(String(key)) {
                    operations.insert("\(key.uppercased()) \(path)")
                }
            }
        }
        return operations
    }

    @Test("every routed operation is documented and every documented operation is routed")
    func routerMatchesSpec() throws {
        let server = try DevServer()
        let routed = Set(server.application.operations)
        let documented = try Self.specOperations()
        #expect(documented.count >= 8)
        #expect(
            routed.subtracting(documented).isEmpty,
            "routed but not in openapi.yaml: \(routed.subtracting(documented).sorted())"
        )
        #expect(
            documented.subtracting(routed).isEmpty,
            "in openapi.yaml but not routed: \(documented.subtracting(routed).sorted())"
        )
    }

    /// The slugs the `Problem` schema's `type` pattern allows, and the `- `slug` (status): ...` items
    /// of its description with their statuses.
    static func documentedSlugs() throws -> (pattern: Set<String>, described: [String: Int]) {
        let text = try String(contentsOf: specURL, encoding: .utf8)
        var pattern = Set<String>()
        var described: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("pattern: '/("), let end = trimmed.range(of: ")$'") {
                let start = trimmed.index(trimmed.startIndex, offsetBy: "pattern: '/(".count)
                pattern.formUnion(trimmed[start..<end.lowerBound].split(separator: "|").map(String.init))
            } else if trimmed.hasPrefix("- `"), let close = trimmed.dropFirst(3).firstIndex(of: "`") {
                let slug = String(trimmed[trimmed.index(trimmed.startIndex, offsetBy: 3)..<close])
                let status = trimmed[trimmed.index(after: close)...].dropFirst(2).prefix(3)
                if trimmed[trimmed.index(after: close)...].hasPrefix(" ("), let code = Int(status) {
                    described[slug] = code
                }
            }
        }
        return (pattern, described)
    }

    /// Every slug the API server can send: the HTTP server's own problems and the REST layer's.
    static var sendableSlugs: Set<String> {
        Set(HTTPProblem.serverProblems.map(\.slug)).union(APIProblem.titles.keys)
    }

    @Test("every problem slug the server can send is documented in openapi.yaml, with its status, and no other")
    func problemSlugsMatchSpec() throws {
        let (pattern, described) = try Self.documentedSlugs()
        let sendable = Self.sendableSlugs
        #expect(sendable.count >= 40)
        #expect(
            sendable.subtracting(pattern).isEmpty,
            "sent but not in the Problem type pattern: \(sendable.subtracting(pattern).sorted())"
        )
        #expect(
            sendable.subtracting(described.keys).isEmpty,
            "sent but not described: \(sendable.subtracting(described.keys).sorted())"
        )
        #expect(
            pattern.subtracting(sendable).isEmpty,
            "documented but never sent: \(pattern.subtracting(sendable).sorted())"
        )
        #expect(Set(described.keys) == pattern, "the pattern and the description list different slugs")
        for problem in HTTPProblem.serverProblems {
            #expect(described[problem.slug] == problem.status, "\(problem.slug) is sent with \(problem.status)")
        }
    }

    /// The string literals between `marker` and the next `,` or `)` on each line of `directory`'s
    /// Swift files: `slug: "x",`, `slug: flag ? "x" : "y",` and `Kind("x", 400)` give their slugs.
    static func literals(in directory: String, after marker: String) throws -> Set<String> {
        let folder = root.appendingPathComponent(directory)
        var found = Set<String>()
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard let start = line.range(of: marker)?.upperBound else { continue }
                let argument = line[start...].prefix { $0 != "," && $0 != ")" }
                let pieces = argument.split(separator: "\"", omittingEmptySubsequences: false)
                // Odd pieces are the insides of string literals.
                for (index, piece) in pieces.enumerated() where index % 2 == 1 {
                    found.insert(String(piece))
                }
            }
        }
        return found
    }

    @Test("every slug in the HTTP and REST sources and the failure tables is registered and documented")
    func sourceSlugsAreRegistered() throws {
        // The Apple ID emulator's `emulator-*` problems belong to its own document, not this one.
        let writtenInSources = try Self.literals(in: "Sources/HTTPCore", after: "slug: ")
            .union(Self.literals(in: "Sources/UpgradeAPI/REST", after: "slug: "))
            .union(Self.literals(in: "Sources/UpgradeAPI/Serve", after: "slug: "))
            .union(UpgradeProblems.table.values.map(\.slug))
            .union(UpgradeProblems.signInTable.values.map(\.slug))
            .union(UpgradeProblems.transferTable.values.map(\.slug))
        // How an upgrade ended is also shown as a slug, the one its failing call was answered with.
        let endings = UpgradeFailureReason.allCases.filter(\.endsUpgrade).map(UpgradeProblems.slug(for:))
        let written = writtenInSources.union(endings)
        #expect(written.contains("request-timeout") && written.contains("invalid-credentials"))
        let unregistered = written.subtracting(Self.sendableSlugs)
        #expect(
            unregistered.isEmpty,
            "slugs in the code without a REST title or HTTPProblem.serverProblems entry: \(unregistered.sorted())"
        )
    }
}

@Suite("Engine failures as problems")
struct UpgradeProblemsTests {
    @Test(
        "every engine failure kind has its status and slug, every slug is in openapi.yaml, and the cause is never rendered"
    )
    func everyKind() throws {
        let document = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Schema/openapi.yaml"),
            encoding: .utf8
        )
        for kind in ServiceFailure.Kind.all {
            let entry = try #require(UpgradeProblems.table[kind], "\(kind) has no status and slug")
            #expect((400...599).contains(entry.status))
            #expect(document.contains("|\(entry.slug)|") || document.contains("/(\(entry.slug)|"), "\(entry.slug)")
        }
        for reason in UpgradeFailureReason.allCases {
            #expect(document.contains(UpgradeProblems.slug(for: reason)))
        }
        let failure = ServiceFailure(.internalError, "could not store", cause: "storage io: disk I/O error")
        let problem = APIProblem(failure)
        #expect(problem.cause == "storage io: disk I/O error")
        #expect(!String(decoding: problem.response.body, as: UTF8.self).contains("disk"))
    }
}
