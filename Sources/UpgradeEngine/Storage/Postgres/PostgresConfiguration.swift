import Foundation

/// Where and how to reach PostgreSQL, parsed from `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=...`
/// (also `postgresql://`). The password is optional: without one libpq reads `PGPASSFILE` (or
/// `~/.pgpass`). Printing, interpolating or dumping a configuration never shows the password.
///
/// As with libpq, several hosts may be listed (`HOST1:PORT1,HOST2:PORT2`): a connection tries them
/// in order and keeps the first that accepts it and, with `target_session_attrs=read-write` (or
/// `primary`), takes writes, so that after a failover new connections find the promoted server
/// (docs/architecture.md, "Failover").
///
/// Nothing here needs a session of its own on the server: no startup `options`, settings made per
/// transaction, unnamed statements unless `prepared_statements=on`. So the URL may name a
/// transaction pooler (PgBouncer in `pool_mode = transaction`) as well as the server itself
/// (docs/architecture.md §8.3).
public struct PostgresConfiguration: Sendable, Equatable {
    /// One server to try: a host name, an IP address, or a socket directory, and its port.
    public struct Host: Sendable, Hashable, CustomStringConvertible {
        /// A host name, an IP address, or a directory holding the server's Unix socket (starts with `/`).
        public var name: String
        public var port: Int

        public init(_ name: String, port: Int = PostgresConfiguration.defaultPort) {
            self.name = name
            self.port = port
        }

        /// `host:port` as an operator would read it, an IPv6 address in brackets. A socket directory
        /// keeps its port too: it names the socket file (`DIR/.s.PGSQL.PORT`), so two ports in one
        /// directory are two servers.
        public var endpoint: String { isIPv6 ? "[\(name)]:\(port)" : "\(name):\(port)" }

        /// An IPv6 address (written in brackets in a URL): a colon in a name that is not a socket directory.
        var isIPv6: Bool { name.contains(":") && !name.hasPrefix("/") }

        public var description: String { endpoint }
    }

    /// libpq's `target_session_attrs`, the ones a service that writes can use.
    public enum TargetSessionAttributes: String, Sendable, CaseIterable {
        /// The first host that accepts the connection, whatever it is.
        case any
        /// The first host whose sessions are not read-only (`SHOW transaction_read_only`).
        case readWrite = "read-write"
        /// The first host that is not in recovery (`pg_is_in_recovery()`).
        case primary
    }

    /// libpq's `sslmode` values.
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// The servers to try, in order; never empty.
    public var hosts: [Host]
    /// Which of `hosts` a connection may settle on.
    public var targetSessionAttributes: TargetSessionAttributes
    /// Nil: libpq's default (`PGUSER`, else the operating-system user).
    public var user: String?
    public var password: String?
    public var database: String
    /// Nil: libpq's default (`PGSSLMODE`, else `prefer`).
    public var sslMode: SSLMode?
    /// Seconds libpq waits for a connection before giving up. Never zero, which would mean forever.
    /// Also how long sent data may stay unacknowledged on an open connection (`tcp_user_timeout`).
    public var connectTimeout: Int
    /// `prepared_statements=on`: each statement is prepared once per connection under a name and then
    /// only bound and executed. Only for a direct connection: through a transaction pooler the next
    /// transaction may run on another server session, which lacks the name (or holds another
    /// client's). Off (the default), every statement is sent as the unnamed statement, parsed with
    /// its run in the same round trip.
    public var preparedStatements = false

    public static let defaultPort = 5432
    /// Short enough that a request meeting an unreachable server answers 503 within its client's
    /// patience, and no longer than the pool's checkout wait.
    public static let defaultConnectTimeout = 5

    public init(
        host: String,
        port: Int = defaultPort,
        user: String? = nil,
        password: String? = nil,
        database: String,
        sslMode: SSLMode? = nil,
        connectTimeout: Int = defaultConnectTimeout,
        preparedStatements: Bool = false
    ) {
        self.init(
            hosts: [Host(host, port: port)],
            user: user,
            password: password,
            database: database,
            sslMode: sslMode,
            connectTimeout: connectTimeout,
            preparedStatements: preparedStatements
        )
    }

    /// `hosts` must not be empty (a URL without a host is refused before this).
    public init(
        hosts: [Host],
        targetSessionAttributes: TargetSessionAttributes = .any,
        user: String? = nil,
        password: String? = nil,
        database: String,
        sslMode: SSLMode? = nil,
        connectTimeout: Int = defaultConnectTimeout,
        preparedStatements: Bool = false
    ) {
        precondition(!hosts.isEmpty, "a PostgreSQL configuration needs a host")
        self.hosts = hosts
        self.targetSessionAttributes = targetSessionAttributes
        self.user = user
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.connectTimeout = connectTimeout
        self.preparedStatements = preparedStatements
    }

    /// The first host's name (the only one, usually).
    public var host: String {
        get { hosts[0].name }
        set { hosts[0].name = newValue }
    }

    /// The first host's port.
    public var port: Int {
        get { hosts[0].port }
        set { hosts[0].port = newValue }
    }

    /// Parses a `postgres://` or `postgresql://` URL. Messages never quote the part before the last `@`
    /// (it may hold the password), nor the port text (a mistyped URL can put password bytes there).
    public init(url text: String) throws(StorageError) {
        // A URL holds no raw control character (RFC 3986); a NUL would cut libpq's C string short,
        // and a line break would split the messages that name a host.
        guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw Self.invalid("it holds a control character (percent-encode it, or remove a stray line break)")
        }
        guard let scheme = ["postgres://", "postgresql://"].first(where: { text.hasPrefix($0) }) else {
            throw Self.invalid("expected postgres://USER:PASSWORD@HOST:PORT/DB")
        }
        var rest = Substring(text.dropFirst(scheme.count))
        var user: String?
        var password: String?
        // The last '@' ends the user information, so an unencoded '@', '/' or '?' in a password still
        // parses, and nothing of it can reach a message below.
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let userPart: Substring
            if let colon = userInfo.firstIndex(of: ":") {
                userPart = userInfo[..<colon]
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], "the password")
            } else {
                userPart = userInfo
            }
            let decodedUser = try Self.decode(userPart, "the user name")
            user = decodedUser.isEmpty ? nil : decodedUser
        }
        if rest.contains("#") { throw Self.invalid("a fragment ('#...') has no meaning here") }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var database: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            database = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        // libpq's multi-host form: HOST1:PORT1,HOST2:PORT2 (a host without a port gets the default).
        var hosts: [Host] = []
        for item in rest.split(separator: ",", omittingEmptySubsequences: false) {
            let (host, port) = try Self.hostAndPort(item)
            hosts.append(Host(host, port: port))
        }
        guard Set(hosts).count == hosts.count else {
            throw Self.invalid("a host is listed twice")
        }
        let databaseName = try Self.decode(database, "the database name")
        guard !databaseName.isEmpty else {
            throw Self.invalid("the database name is missing (postgres://USER@HOST:PORT/DB)")
        }
        self.init(hosts: hosts, user: user, password: password, database: databaseName)
        try applyQuery(query)
    }

    private static func hostAndPort(_ text: Substring) throws(StorageError) -> (String, Int) {
        var hostText = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("an IPv6 host misses its ']'") }
            hostText = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("expected ':PORT' after the IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        let host = try decode(hostText, "the host")
        guard !host.isEmpty else { throw invalid("the host is missing (postgres://USER@HOST:PORT/DB)") }
        // Messages name the host: a control character decoded into it could forge a log line.
        guard !host.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid("the host holds a control character")
        }
        var port = defaultPort
        if let portText {
            guard Self.isDigits(portText), let number = Int(portText), (1...65535).contains(number) else {
                throw invalid("the port must be a number from 1 to 65535")
            }
            port = number
        }
        return (host, port)
    }

    private mutating func applyQuery(_ query: Substring) throws(StorageError) {
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0], "a parameter name")
            let value = parts.count == 2 ? try Self.decode(parts[1], "the value of \(Self.quoted(name))") : ""
            guard seen.insert(name).inserted else {
                throw Self.invalid("the parameter \(Self.quoted(name)) is given twice")
            }
            switch name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    let modes = SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw Self.invalid("sslmode must be one of \(modes)")
                }
                sslMode = mode
            case "target_session_attrs":
                guard let attributes = TargetSessionAttributes(rawValue: value) else {
                    let values = TargetSessionAttributes.allCases.map(\.rawValue).joined(separator: ", ")
                    throw Self.invalid("target_session_attrs must be one of \(values) (the service writes)")
                }
                targetSessionAttributes = attributes
            case "connect_timeout":
                guard Self.isDigits(Substring(value)), let seconds = Int(value), (1...3600).contains(seconds) else {
                    throw Self.invalid("connect_timeout must be a whole number of seconds from 1 to 3600")
                }
                connectTimeout = seconds
            case "prepared_statements":
                switch value {
                case "on": preparedStatements = true
                case "off": preparedStatements = false
                default: throw Self.invalid("prepared_statements must be on or off")
                }
            default:
                throw Self.invalid(
                    "unknown parameter \(Self.quoted(name)); only sslmode, connect_timeout, target_session_attrs and prepared_statements are accepted"
                )
            }
        }
    }

    /// Percent-decoding as libpq does it: `%XX` only, `+` stays a plus.
    private static func decode(_ text: Substring, _ what: String) throws(StorageError) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw invalid("\(what) has a '%' not followed by two hex digits")
            }
            bytes.append(high << 4 | low)
        }
        guard !bytes.contains(0), let decoded = String(validating: bytes, as: UTF8.self) else {
            throw invalid("\(what) does not decode to UTF-8 text without NUL")
        }
        return decoded
    }

    /// A parameter's name as a message quotes it: `'name'` when it is short printable ASCII, else
    /// not at all (a decoded line break would split the message, an escape sequence reach a terminal).
    private static func quoted(_ name: String) -> String {
        let plain = (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { (0x21...0x7E).contains($0) }
        return plain ? "'\(name)'" : "(a name that is not printable ASCII)"
    }

    /// One to five ASCII digits: no sign, no space, nothing `Int.init` would also take.
    private static func isDigits(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count)
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func invalid(_ reason: String) -> StorageError {
        StorageError(.configuration, "invalid PostgreSQL URL: \(reason)")
    }

    /// Every host as `host:port`, comma-separated as in the URL: a socket directory alone, an IPv6
    /// address in brackets.
    public var endpoint: String { hosts.map(\.endpoint).joined(separator: ",") }

    /// libpq's keyword/value pairs (for `PQconnectdbParams`, which needs no quoting or escaping) to
    /// reach `server` (by default the first host); libpq itself refuses a server that does not match
    /// `target_session_attrs`. Holds the password: never print it. Only what a pooler accepts at
    /// startup: no `options` (server settings go with each transaction, `PostgresConnection.begin`).
    func connectionParameters(to server: Host? = nil) -> [(String, String)] {
        let server = server ?? hosts[0]
        var parameters: [(String, String)] = [
            ("host", server.name), ("port", String(server.port)), ("dbname", database),
            ("target_session_attrs", targetSessionAttributes.rawValue),
            ("connect_timeout", String(connectTimeout)),
            ("client_encoding", "UTF8"),
            ("fallback_application_name", "siwa-upgrade"),
            // A peer that vanished (a crashed host, a cut network) is noticed in about a minute
            // instead of the kernel's two hours, so a waiting statement fails instead of hanging.
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"),
            ("keepalives_count", "3"),
            // Keepalives do not run while sent data waits for its acknowledgement: without this, a
            // statement sent to a host that vanished waits for the kernel's retransmissions (minutes).
            ("tcp_user_timeout", String(connectTimeout * 1000)),
        ]
        if let user { parameters.append(("user", user)) }
        if let password { parameters.append(("password", password)) }
        if let sslMode { parameters.append(("sslmode", sslMode.rawValue)) }
        return parameters
    }
}

// The password must never reach a log line or a test failure message through interpolation or reflection.
extension PostgresConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The URL without its password (a password, if any, shows as `(redacted)`). Read back, it gives
    /// this configuration with `(redacted)` for the password: every name is percent-encoded but an
    /// IPv6 address's digits and colons.
    public var description: String {
        var text = "postgres://"
        if user != nil || password != nil {
            text += Self.encode(user ?? "") + (password == nil ? "" : ":(redacted)") + "@"
        }
        text += hosts.map { host in
            let name = host.isIPv6 ? "[\(Self.encode(host.name, keeping: ":"))]" : Self.encode(host.name)
            return "\(name):\(host.port)"
        }.joined(separator: ",")
        text += "/" + Self.encode(database)
        var query: [String] = []
        if targetSessionAttributes != .any { query.append("target_session_attrs=\(targetSessionAttributes.rawValue)") }
        if let sslMode { query.append("sslmode=\(sslMode.rawValue)") }
        if connectTimeout != Self.defaultConnectTimeout { query.append("connect_timeout=\(connectTimeout)") }
        if preparedStatements { query.append("prepared_statements=on") }
        if !query.isEmpty { text += "?" + query.joined(separator: "&") }
        return text
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "hosts": hosts, "targetSessionAttributes": targetSessionAttributes, "user": user as Any,
                "password": password == nil ? "nil" : "(redacted)",
                "database": database, "sslMode": sslMode as Any, "connectTimeout": connectTimeout,
                "preparedStatements": preparedStatements,
            ],
            displayStyle: .struct
        )
    }

    /// `text` with every byte but RFC 3986's unreserved ones (and `keeping`) percent-encoded.
    private static func encode(_ text: String, keeping: Unicode.Scalar? = nil) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case _ where keeping.map({ $0.value == UInt32(byte) }) ?? false:
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += (byte < 16 ? "%0" : "%") + String(byte, radix: 16, uppercase: true)
            }
        }
        return encoded
    }
}
