import Foundation
import Hummingbird

// `HummingbirdPeer PORT`: GET /ping answers the same 15-byte JSON body as the server's /healthz.
let port = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 8080
let router = Router()
router.get("ping") { _, _ -> Response in
    Response(
        status: .ok,
        headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#))
    )
}
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil)
)
print("listening \(port)")
try await app.runService()
