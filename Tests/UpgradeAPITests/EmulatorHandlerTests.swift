import Foundation
import Testing
import UpgradeEngine

@testable import AppleEmulator
@testable import UpgradeAPI

@Suite("Apple ID emulator over HTTP: which requests are answered on the event loop")
struct EmulatorHandlerTests {
    static func request(_ method: String, _ target: String) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.append(name: "Host", value: "localhost")
        return HTTPRequest(
            head: HTTPRequestHead(method: method, target: target, version: .http1_1, headers: headers),
            client: HTTPClientAddress(bytes: [127, 0, 0, 1])!
        )
    }

    @Test("the migration endpoint is answered on the loop, as a worker would answer it; the others go to a worker")
    func migrationOnTheLoop() throws {
        let handler = AppleIDEmulatorHandler(emulator: AppleIDEmulator())
        let migration = Self.request("POST", "/auth/usermigrationinfo")
        let onLoop = try #require(handler.respondOnEventLoop(to: migration))
        let onWorker = try handler.handle(migration)
        #expect(onLoop.status == 400 && onLoop.status == onWorker.status, "no form: invalid_request either way")
        #expect(onLoop.body == onWorker.body)
        #expect(handler.respondOnEventLoop(to: Self.request("GET", "/auth/usermigrationinfo"))?.status == 405)
        for (method, target) in [("POST", "/auth/token"), ("GET", "/auth/keys"), ("POST", "/emulator/users")] {
            #expect(handler.respondOnEventLoop(to: Self.request(method, target)) == nil, "\(target)")
        }
    }
}
