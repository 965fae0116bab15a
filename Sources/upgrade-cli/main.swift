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
            AccountsAddCommand.self,
            AccountsShowCommand.self,
            ServeCommand.self,
            DemoCommand.self,
            TransferPrepareCommand.self,
            TransferCompleteCommand.self,
            TransferStatusCommand.self,
            EmulatorServeCommand.self,
        ]
    }
}

struct HelpCommand: CLICommand {
    static let path = ["help"]
    static let summary = "list the commands"
    static let usage = "upgrade-cli help"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        try arguments.finish()
        Console.out("usage: upgrade-cli COMMAND [OPTIONS]\n\ncommands:")
        for command in CommandRegistry.all {
            Console.out(
                "  \(command.path.joined(separator: " ").padding(toLength: 22, withPad: " ", startingAt: 0))\(command.summary)"
            )
        }
        Console.out("\nexit codes: 0 success, 1 failed (reason printed), 2 usage or configuration error")
        return ExitCode.success
    }
}

func dispatch(_ argv: [String]) -> Int32 {
    // Longest matching command path wins, so `db migrate` is not mistaken for a `db` command.
    let match =
        CommandRegistry.all
        .filter { argv.count >= $0.path.count && Array(argv.prefix($0.path.count)) == $0.path }
        .max { $0.path.count < $1.path.count }
    guard let command = match else {
        let given = argv.isEmpty ? "nothing" : "'\(argv.joined(separator: " "))'"
        Console.err("error: unknown command \(given); run 'upgrade-cli help'")
        return ExitCode.usage
    }
    var reader = ArgumentReader(Array(argv.dropFirst(command.path.count)))
    if reader.flag("--help") || reader.flag("-h") {
        Console.out("usage: \(command.usage)\n\(command.summary)")
        return ExitCode.success
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
