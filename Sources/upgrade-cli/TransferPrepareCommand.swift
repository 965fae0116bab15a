import Foundation
import UpgradeEngine

struct TransferPrepareCommand: CLICommand {
    static let path = ["transfer", "prepare"]
    static let summary = "sender team: obtain a transfer_sub for every Apple-linked account"
    static let usage =
        "upgrade-cli transfer prepare --target-team ID [--accepted-at UNIX|ISO8601] \(TransferBatchCommand.batchUsage)"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let target = try arguments.requiredOption("--target-team")
        let requestedClientID = try arguments.option("--client-id")
        let acceptedText = try arguments.option("--accepted-at")
        let options = try TransferBatchCommand.readOptions(&arguments)
        try arguments.finish()

        guard ClientSecretSigner.isAppleIdentifier(target) else {
            throw UsageError("--target-team must be the receiving team's id: 10 characters A-Z or 0-9")
        }
        let now = Clock.nowSeconds
        // Preparing may start before the transfer; once it was accepted, the window applies.
        let windowEndsAt = try acceptedText.map {
            try TransferBatchCommand.acceptedAt($0, now: now) + TransferStateMachine.windowLength
        }
        let configuration = try TransferCommandConfiguration.load(ProcessInfo.processInfo.environment)
        guard target != configuration.teamID else {
            throw UsageError(
                "--target-team \(target) is this deployment's own team (APPLE_TEAM_ID); give the id of the team receiving the app, or its users cannot be migrated"
            )
        }
        let clientID = try configuration.clientID(requestedClientID)
        let batch = try TransferBatchCommand.batch(configuration, location: location, now: now)
        let service = batch.service
        let announce = {
            Console.out(
                "preparing the transfer of \(clientID) from team \(configuration.teamID) to team \(target)\(options.dryRun ? " (dry run: nothing is written)" : "")"
            )
        }
        return try TransferBatchCommand.run(options, job: "transfer prepare \(target)", on: batch, announce: announce) {
            batchOptions throws(TransferFailure) in
            try await service.prepare(
                targetTeamID: target,
                clientID: clientID,
                windowEndsAt: windowEndsAt,
                now: now,
                options: batchOptions
            )
        }
    }
}
