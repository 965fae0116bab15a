import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket listening on a free loopback port that never accepts: the kernel completes up to
/// `backlog` handshakes and nothing ever answers (a server that hangs, or a port to keep taken).
/// Closed on `close()` or when released.
package final class LoopbackListener: Sendable {
    package let descriptor: Int32
    package let port: UInt16

    package init(backlog: Int32 = 8) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && listen(descriptor, backlog) == 0
                    && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { Glibc.close(descriptor) }
}
