import Foundation
import Testing
import UpgradeEngine

@testable import UpgradeAPI

/// `Schema/openapi.yaml` and the router list the same operations, so the document clients rely on
/// cannot drift from what the server serves.
@Suite("OpenAPI contract")
struct OpenAPIContractTests {
    static let specURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Schema/openapi.yaml")

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
        for kind in UpgradeFailure.Kind.all {
            let entry = try #require(UpgradeProblems.table[kind], "\(kind) has no status and slug")
            #expect((400...599).contains(entry.status))
            #expect(document.contains("|\(entry.slug)|") || document.contains("/(\(entry.slug)|"), "\(entry.slug)")
        }
        for reason in UpgradeFailureReason.allCases {
            #expect(document.contains(UpgradeProblems.slug(for: reason)) || reason == .appleExchangeFailed)
        }
        let failure = UpgradeFailure(.internalError, "could not store", cause: "storage io: disk I/O error")
        let problem = APIProblem(failure)
        #expect(problem.cause == "storage io: disk I/O error")
        #expect(!String(decoding: problem.response.body, as: UTF8.self).contains("disk"))
    }
}
