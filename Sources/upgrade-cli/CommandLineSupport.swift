import Foundation

/// Exit codes shared by every command (README, Command line).
enum ExitCode {
    static let success: Int32 = 0
    /// Some rows or checks failed; the reason was printed.
    static let failure: Int32 = 1
    /// Usage or configuration error.
    static let usage: Int32 = 2
}

/// A usage or configuration problem: printed as one line, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// A command-level failure with its own exit code and one-line message.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32
    init(_ message: String, exitCode: Int32 = ExitCode.failure) {
        description = message
        self.exitCode = exitCode
    }

    /// A configuration problem (the environment, a file, the database): exit 2 without the usage
    /// text, since the command line itself was fine.
    static func configuration(_ message: String) -> CommandFailure {
        CommandFailure(message, exitCode: ExitCode.usage)
    }
}

/// One subcommand. `run` returns the process exit code.
protocol CLICommand {
    /// Words that select the command, e.g. `["db", "migrate"]`.
    static var path: [String] { get }
    static var summary: String { get }
    static var usage: String { get }
    static func run(_ arguments: inout ArgumentReader) throws -> Int32
}

/// A small strict argument reader: options are consumed by name, unknown options are errors,
/// and `finish()` rejects anything left over.
struct ArgumentReader {
    private var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// `--name VALUE` or `--name=VALUE`; nil when absent. A repeated option is an error.
    mutating func option(_ name: String) throws -> String? {
        var found: String?
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == name {
                guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value") }
                guard found == nil else { throw UsageError("\(name) given more than once") }
                found = remaining[index + 1]
                remaining.removeSubrange(index...(index + 1))
            } else if argument.hasPrefix(name + "=") {
                guard found == nil else { throw UsageError("\(name) given more than once") }
                found = String(argument.dropFirst(name.count + 1))
                remaining.remove(at: index)
            } else {
                index += 1
            }
        }
        return found
    }

    /// Every `--name VALUE` / `--name=VALUE`, in order; empty when absent. For options that may repeat.
    mutating func repeatedOption(_ name: String) throws -> [String] {
        var values: [String] = []
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == name {
                guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value") }
                values.append(remaining[index + 1])
                remaining.removeSubrange(index...(index + 1))
            } else if argument.hasPrefix(name + "=") {
                values.append(String(argument.dropFirst(name.count + 1)))
                remaining.remove(at: index)
            } else {
                index += 1
            }
        }
        return values
    }

    mutating func requiredOption(_ name: String) throws -> String {
        guard let value = try option(name) else { throw UsageError("missing required option \(name)") }
        return value
    }

    mutating func intOption(_ name: String) throws -> Int? {
        guard let text = try option(name) else { return nil }
        guard let value = Int(text) else { throw UsageError("\(name) must be an integer, got '\(text)'") }
        return value
    }

    mutating func int64Option(_ name: String) throws -> Int64? {
        guard let text = try option(name) else { return nil }
        guard let value = Int64(text) else { throw UsageError("\(name) must be an integer, got '\(text)'") }
        return value
    }

    mutating func flag(_ name: String) -> Bool {
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// The next positional argument (anything not starting with `--`).
    mutating func positional(_ what: String) throws -> String {
        guard let index = remaining.firstIndex(where: { !$0.hasPrefix("--") }) else {
            throw UsageError("missing \(what)")
        }
        return remaining.remove(at: index)
    }

    /// Everything not consumed yet, in order.
    mutating func remainingWords() -> [String] {
        defer { remaining = [] }
        return remaining
    }

    func finish() throws {
        if let extra = remaining.first {
            throw UsageError(extra.hasPrefix("--") ? "unknown option \(extra)" : "unexpected argument '\(extra)'")
        }
    }
}

/// Output helpers: results to stdout, diagnostics to stderr.
enum Console {
    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// All of standard input, with one trailing newline removed (what `echo pw |` adds).
    static func readSecretFromStdin() -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        var text = String(decoding: data, as: UTF8.self)
        if text.hasSuffix("\r\n") {
            text.removeLast(2)
        } else if text.hasSuffix("\n") {
            text.removeLast()
        }
        return text
    }
}
