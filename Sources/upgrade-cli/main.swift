import Foundation

/// Every subcommand, in the order `help` lists them.
enum CommandRegistry {
    static var all: [any CLICommand.Type] {
        [
            HelpCommand.self,
            DatabaseMigrateCommand.self,
            DatabaseStatusCommand.self,
            DatabaseCheckCommand.self,
            TokenVerifyCommand.self,
            PasswordVerifyCommand.self,
            PasswordRulesCommand.self,
            AccountsAddCommand.self,
            AccountsShowCommand.self,
            AuditCommand.self,
            ReportCommand.self,
            AccountsDeleteCommand.self,
            AccountsImportCommand.self,
            HashParametersAddCommand.self,
            HashParametersListCommand.self,
            AdminTokensAddCommand.self,
            AdminTokensListCommand.self,
            AdminTokensRemoveCommand.self,
            KeysStatusCommand.self,
            KeysResealCommand.self,
            ServeCommand.self,
            DemoCommand.self,
            TransferPrepareCommand.self,
            TransferCompleteCommand.self,
            TransferStatusCommand.self,
            WebhooksStatusCommand.self,
            WebhooksReplayCommand.self,
            EmulatorServeCommand.self,
            LegacyVerifyCommand.self,
        ]
    }
}

struct HelpCommand: CLICommand {
    static let path = ["help"]
    static let summary = "list the commands, or show a command's usage (also --help, -h)"
    static let usage = "upgrade-cli help [COMMAND]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        show(arguments.remainingWords().filter { !helpFlags.contains($0) })
    }

    /// The listing for no words, a command's usage, or the commands of a group such as `transfer`;
    /// anything else is an unknown command.
    static func show(_ words: [String]) -> Int32 {
        if let command = CommandRegistry.all.first(where: { $0.path == words }) {
            Console.out("usage: \(command.usage)\n\(command.summary)")
            return ExitCode.success
        }
        let commands = CommandRegistry.all.filter { Array($0.path.prefix(words.count)) == words }
        guard !commands.isEmpty else { return unknown(words) }
        let prefix = words.isEmpty ? "" : words.joined(separator: " ") + " "
        Console.out("usage: upgrade-cli \(prefix)COMMAND [OPTIONS]\n\ncommands:")
        for command in commands {
            Console.out(
                "  \(command.path.joined(separator: " ").padding(toLength: 22, withPad: " ", startingAt: 0))\(command.summary)"
            )
        }
        Console.out("\nexit codes: 0 success, 1 failed (reason printed), 2 usage or configuration error")
        return ExitCode.success
    }

    static func unknown(_ words: [String]) -> Int32 {
        let given = words.isEmpty ? "nothing" : "'\(words.joined(separator: " "))'"
        Console.err("error: unknown command \(given); run 'upgrade-cli help'")
        return ExitCode.usage
    }
}

private let helpFlags: Set<String> = ["--help", "-h"]

func dispatch(_ argv: [String]) -> Int32 {
    // `upgrade-cli --help [COMMAND]` is `upgrade-cli help [COMMAND]`.
    let argv = argv.first.map(helpFlags.contains) == true ? ["help"] + argv.dropFirst() : argv
    // Longest matching command path wins, so `db migrate` is not mistaken for a `db` command.
    let match =
        CommandRegistry.all
        .filter { argv.count >= $0.path.count && Array(argv.prefix($0.path.count)) == $0.path }
        .max { $0.path.count < $1.path.count }
    guard let command = match else {
        // `transfer --help`: the commands of a group.
        let words = argv.filter { !helpFlags.contains($0) }
        return words.count < argv.count ? HelpCommand.show(words) : HelpCommand.unknown(argv)
    }
    var reader = ArgumentReader(Array(argv.dropFirst(command.path.count)))
    if command != HelpCommand.self, reader.flag("--help") || reader.flag("-h") {
        return HelpCommand.show(command.path)
    }
    do {
        return try command.run(&reader)
    } catch let error as UsageError {
        Console.err("error: \(error.description)\nusage: \(command.usage)")
        return ExitCode.usage
    } catch let error as CommandFailure {
        Console.err("error: \(error.description)")
        return error.exitCode
    } catch {
        Console.err("error: \(error)")
        return ExitCode.failure
    }
}

exit(dispatch(Array(CommandLine.arguments.dropFirst())))
