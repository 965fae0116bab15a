import Foundation
import UpgradeEngine

struct TransferCompleteCommand: CLICommand {
    static let path = ["transfer", "complete"]
    static let summary = "recipient team: exchange each transfer_sub for the new sub and relay email"
    static let usage = "upgrade-cli transfer complete --accepted-at UNIX|ISO8601 \(TransferBatchCommand.batchUsage)"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let acceptedText = try arguments.requiredOption("--accepted-at")
        let requestedClientID = try arguments.option("--client-id")
        let options = try TransferBatchCommand.readOptions(&arguments)
        try arguments.finish()

        let now = Clock.nowSeconds
        let acceptedAt = try TransferBatchCommand.acceptedAt(acceptedText, now: now)
        let windowEndsAt = acceptedAt + TransferStateMachine.windowLength
        let configuration = try TransferCommandConfiguration.load(ProcessInfo.processInfo.environment)
        let clientID = try configuration.clientID(requestedClientID)
        let batch = try TransferBatchCommand.batch(configuration, location: location, now: now)
        let service = batch.service
        let announce = {
            Console.out(
                "completing the transfer of \(clientID) to team \(configuration.teamID); the window ends \(TransferBatchCommand.iso8601(windowEndsAt))\(options.dryRun ? " (dry run: nothing is written)" : "")"
            )
            // A window an earlier run recorded differently: one of the two acceptance times is wrong.
            if let recorded = try? TransferService.status(store: batch.store, now: now) {
                for end in recorded.windows.keys.sorted() where end != windowEndsAt {
                    Console.err(
                        "warning: an earlier run recorded the window as ending \(TransferBatchCommand.iso8601(end)), not \(TransferBatchCommand.iso8601(windowEndsAt)); check --accepted-at"
                    )
                }
            }
            if now >= windowEndsAt {
                Console.err(
                    "warning: the 60-day window closed at \(TransferBatchCommand.iso8601(windowEndsAt)); Apple no longer exchanges transfer identifiers, and rows will fail as window-closed"
                )
            }
        }
        return try TransferBatchCommand.run(options, job: "transfer complete", on: batch, announce: announce) {
            batchOptions throws(TransferFailure) in
            try await service.complete(clientID: clientID, windowEndsAt: windowEndsAt, now: now, options: batchOptions)
        }
    }
}
