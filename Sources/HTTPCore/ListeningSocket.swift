import CSystem
import Glibc

/// Opens the server's one listening socket.
///
/// One socket, accepted from by one loop that hands connections to the others, rather than a
/// SO_REUSEPORT socket per loop: with SO_REUSEPORT a second copy of the server binds the same port
/// silently next to a stale one and the kernel splits clients between them. Without it, a taken
/// address fails loudly with EADDRINUSE. SO_REUSEADDR only lets a restart bind past TIME_WAIT
/// connections; on Linux it never allows two listeners on one address.
enum ListeningSocket {
    /// Returns the non-blocking listening descriptor and the bound port (useful when `port` is 0).
    static func open(host: String, port: Int, backlog: Int) throws(HTTPServerError) -> (fd: Int32, port: Int) {
        let printable = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var address = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        var ipv4 = sockaddr_in()
        var ipv6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &ipv4.sin_addr) == 1 {
            ipv4.sin_family = sa_family_t(AF_INET)
            ipv4.sin_port = UInt16(port).bigEndian
            withUnsafeBytes(of: ipv4) { source in
                withUnsafeMutableBytes(of: &address) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        } else if inet_pton(AF_INET6, host, &ipv6.sin6_addr) == 1 {
            ipv6.sin6_family = sa_family_t(AF_INET6)
            ipv6.sin6_port = UInt16(port).bigEndian
            withUnsafeBytes(of: ipv6) { source in
                withUnsafeMutableBytes(of: &address) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            throw HTTPServerError(
                .invalidAddress,
                "'\(host)' is not a numeric IPv4 or IPv6 address (for example 127.0.0.1 or ::1)"
            )
        }

        let fd = socket(family, csystem_SOCK_STREAM | csystem_SOCK_NONBLOCK_CLOEXEC, 0)
        guard fd >= 0 else { throw HTTPServerError.system("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))

        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let number = errno
            Glibc.close(fd)
            if number == EADDRINUSE {
                throw HTTPServerError(
                    .addressInUse,
                    "\(printable) is already in use; is another copy of the server still running?"
                )
            }
            throw HTTPServerError.system("bind to \(printable)", errno: number)
        }
        guard listen(fd, Int32(clamping: backlog)) == 0 else {
            let number = errno
            Glibc.close(fd)
            throw HTTPServerError.system("listen on \(printable)", errno: number)
        }
        var boundAddress = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &boundAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) }
        }
        guard named == 0 else {
            let number = errno
            Glibc.close(fd)
            throw HTTPServerError.system("getsockname", errno: number)
        }
        let networkPort: UInt16 =
            family == AF_INET
            ? withUnsafeBytes(of: boundAddress) { $0.load(as: sockaddr_in.self).sin_port }
            : withUnsafeBytes(of: boundAddress) { $0.load(as: sockaddr_in6.self).sin6_port }
        return (fd, Int(UInt16(bigEndian: networkPort)))
    }
}
