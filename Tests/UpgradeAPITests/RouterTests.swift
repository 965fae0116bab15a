import Testing

@testable import UpgradeAPI

@Suite("Router: methods and paths to operations")
struct RouterTests {
    enum Operation: Sendable, Equatable { case list, start, view, stepUp, health }

    static let router: Router<Operation> = {
        var router = Router<Operation>()
        router.add("POST", "/v1/upgrades", .start)
        router.add("GET", "/v1/upgrades", .list)
        router.add("GET", "/v1/upgrades/{id}", .view)
        router.add("POST", "/v1/upgrades/{id}/step-up", .stepUp)
        router.add("GET", "/healthz", .health)
        return router
    }()

    func found(_ method: String, _ path: Substring) -> (Operation, [String: String])? {
        guard case .found(let route, let parameters) = Self.router.match(method: method, path: path) else { return nil }
        return (route.operation, parameters)
    }

    @Test("fixed paths and captures are found, with the captured identifier")
    func found() throws {
        #expect(found("POST", "/v1/upgrades")?.0 == .start)
        #expect(found("GET", "/v1/upgrades")?.0 == .list)
        let view = try #require(found("GET", "/v1/upgrades/upg_AbC-09.x"))
        #expect(view.0 == .view && view.1 == ["id": "upg_AbC-09.x"])
        let stepUp = try #require(found("POST", "/v1/upgrades/u1/step-up"))
        #expect(stepUp.0 == .stepUp && stepUp.1 == ["id": "u1"])
        #expect(found("GET", "/healthz")?.0 == .health)
        // A substring of a longer buffer is matched on its own bytes.
        let full = "/healthz?probe=1"
        #expect(found("GET", full[..<full.firstIndex(of: "?")!])?.0 == .health)
    }

    @Test(
        "paths of another shape, case or byte match nothing",
        arguments: [
            "/v1/upgrades/", "/v1//upgrades", "//v1/upgrades", "/V1/upgrades", "/v1/upgrade", "/v1/upgradesx",
            "v1/upgrades", "", "/", "/healthz/", "/v1/upgrades/a%2Fb", "/v1/upgrades/\u{e9}",
            "/v1/upgrades/" + String(repeating: "a", count: 65), "/v1/upgrades/u1/step-up/",
        ]
    )
    func notFound(path: String) {
        guard case .notFound = Self.router.match(method: "GET", path: Substring(path)) else {
            Issue.record("\(path) matched")
            return
        }
    }

    @Test("a known path with another method names the methods it has")
    func methodNotAllowed() {
        guard
            case .methodNotAllowed(let allowed, let pattern) = Self.router.match(method: "DELETE", path: "/v1/upgrades")
        else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["POST", "GET", "HEAD"] && pattern == "/v1/upgrades")
        guard case .methodNotAllowed(let one, _) = Self.router.match(method: "POST", path: "/v1/upgrades/u1") else {
            Issue.record("expected 405")
            return
        }
        #expect(one == ["GET", "HEAD"])
    }

    @Test("HEAD finds the path's GET route, with its captures; a path without GET has no HEAD")
    func head() throws {
        let view = try #require(found("HEAD", "/v1/upgrades/u1"))
        #expect(view.0 == .view && view.1 == ["id": "u1"])
        #expect(found("HEAD", "/healthz")?.0 == .health)
        guard
            case .methodNotAllowed(let allowed, _) = Self.router.match(method: "HEAD", path: "/v1/upgrades/u1/step-up")
        else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["POST"])
    }

    @Test("a capture of 64 identifier bytes is the longest accepted")
    func captureLength() {
        let id = String(repeating: "a", count: 64)
        #expect(found("GET", Substring("/v1/upgrades/" + id))?.1 == ["id": id])
    }

    @Test("a text capture takes any path-segment text, up to its limit; identifier captures stay strict")
    func textCapture() {
        var router = Router<Operation>(textCaptures: ["username"])
        router.add("GET", "/v1/admin/accounts/{username}", .view)
        router.add("GET", "/v1/upgrades/{id}", .view)
        func captured(_ path: String) -> String? {
            guard case .found(_, let parameters) = router.match(method: "GET", path: Substring(path)) else {
                return nil
            }
            return parameters["username"] ?? parameters["id"]
        }
        // Decoded once, here, strictly: `+` stays itself in a path.
        for (text, decoded) in [
            ("carol.o'neil@example.com", "carol.o'neil@example.com"), ("jos%C3%A9", "jos\u{e9}"), ("a+b", "a+b"),
            ("x:y;z=1", "x:y;z=1"), (String(repeating: "a", count: 1024), String(repeating: "a", count: 1024)),
            // 256 characters of four UTF-8 bytes each, percent-encoded: the longest username documented.
            (String(repeating: "%F1%89%A1%AA", count: 256), String(repeating: "\u{4986A}", count: 256)),
        ] {
            #expect(captured("/v1/admin/accounts/\(text)") == decoded, "\(text)")
        }
        // Text that is not percent-encoded UTF-8 matches the route without the parameter: the
        // handler refuses it after its token check.
        for text in ["%C3", "%zz", "100%"] {
            guard
                case .found(_, let parameters) = router.match(
                    method: "GET",
                    path: Substring("/v1/admin/accounts/\(text)")
                )
            else {
                Issue.record("\(text) should match the route")
                continue
            }
            #expect(parameters["username"] == nil, "\(text)")
        }
        for text in ["", "a b", "a\"b", "a/b", "a?b", "jos\u{e9}", "a#b", String(repeating: "a", count: 3073)] {
            #expect(captured("/v1/admin/accounts/\(text)") == nil, "\(text)")
        }
        #expect(captured("/v1/upgrades/a@b") == nil && captured("/v1/upgrades/a%40b") == nil)
    }
}
