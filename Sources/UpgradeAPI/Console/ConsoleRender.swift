import UpgradeEngine

/// The content of each console page, one small function per page or part, from what the page's
/// one service call returned. Pure: no I/O, no clock (the caller passes `now` where a page needs it).
enum ConsoleRender {
    /// The overview for a token without `audit`: who is signed in and where to go.
    static func welcome(_ token: AdminToken) -> HTML {
        ConsolePage.message(
            "Signed in as \(token.name). This token's scopes (\(token.scopes.map(\.rawValue).joined(separator: ", "))) do not include audit, so the background work is not shown."
        )
    }

    /// The backlog `/metrics` reports too: pending Apple revocations, the webhook outbox and the
    /// accounts still waiting for the legacy login system.
    static func overview(_ backlog: AdminQueryService.Backlog) -> HTML {
        let stats = ConsolePage.stats(
            label: "Backlog",
            [
                ("Pending Apple revocations", backlog.pendingAppleRevocations),
                ("Webhooks pending", backlog.webhooks.pending),
                ("Webhooks failed", backlog.webhooks.failed),
                ("Webhooks delivered", backlog.webhooks.delivered),
                ("Legacy passwords", backlog.legacyPasswords),
            ]
        )
        let facts = ConsolePage.facts([
            ("Oldest pending webhook", ConsolePage.time(backlog.webhooks.oldestPendingAt)),
            ("Oldest due Apple link check", ConsolePage.time(backlog.oldestDueAppleLinkCheck)),
        ])
        return """
            <section aria-labelledby="backlog-heading">
            <h2 id="backlog-heading">Backlog</h2>
            \(stats)
            \(facts)
            </section>
            """
    }

    /// The lookup form, filled in with the last search.
    static func accountSearch(username: String) -> HTML {
        """
        <section aria-labelledby="lookup-heading">
        <h2 id="lookup-heading">Look an account up</h2>
        <form method="get" action="/accounts" class="inline" role="search">
        <div class="field"><label for="username">Username</label>
        <input type="search" id="username" name="username" value="\(username)" autocomplete="off" required></div>
        <button type="submit">Look up</button>
        </form>
        </section>
        """
    }

    /// One account: facts, Apple link, open upgrades, latest audit events, and the deletion form.
    static func account(_ overview: AccountOverview, csrf: String) -> HTML {
        let account = overview.account
        let profile = ConsolePage.facts([
            ("Username", HTML(text: account.username)),
            ("Account id", ConsolePage.mono(account.id)),
            ("Credential", ConsolePage.mono(account.credentialKind.rawValue)),
            ("Display name", ConsolePage.text(overview.displayName)),
            ("Email", ConsolePage.text(overview.email)),
            ("Password", ConsolePage.text(overview.password?.format)),
            ("TOTP", ConsolePage.text(overview.totp.map { "\($0.digits) digits, \($0.algorithm.rawValue)" })),
            ("Recovery codes left", "\(overview.recoveryCodesLeft)"),
            ("Created", ConsolePage.time(account.createdAt)),
            ("Updated", ConsolePage.time(account.updatedAt)),
        ])
        let apple: HTML =
            overview.apple.map { link in
                ConsolePage.facts([
                    ("Status", ConsolePage.mono(link.status.rawValue)),
                    ("Credential state", ConsolePage.text(link.credentialState?.name)),
                    ("Team", ConsolePage.mono(link.teamID)),
                    ("Client", ConsolePage.mono(link.clientID)),
                    ("Apple email", ConsolePage.text(link.email)),
                    ("Refresh token stored", link.hasRefreshToken ? "yes" : "no"),
                    ("Linked", ConsolePage.time(link.linkedAt)),
                ])
            } ?? "<p>No Apple link.</p>"
        let transfer: HTML =
            overview.transfer.map { transfer in
                ConsolePage.facts([
                    ("Status", ConsolePage.mono(transfer.status)),
                    ("Target team", ConsolePage.mono(transfer.targetTeamID)),
                    ("Failure", ConsolePage.text(transfer.failureReason)),
                ])
            } ?? ""
        let earlierTransfers: HTML =
            overview.earlierTransfers.isEmpty
            ? ""
            : ConsolePage.table(
                caption: "Earlier transfers (oldest first)",
                headers: ["Status", "Target team", "Failure", "Retired"],
                rows: overview.earlierTransfers.map {
                    [
                        ConsolePage.mono($0.status), ConsolePage.mono($0.targetTeamID),
                        ConsolePage.text($0.failureReason), ConsolePage.time($0.retiredAt),
                    ]
                }
            )
        let flows = ConsolePage.table(
            caption: "Open upgrades",
            headers: ["Upgrade", "Status", "Expires"],
            rows: overview.openUpgrades.map {
                [ConsolePage.mono($0.id), ConsolePage.mono($0.status), ConsolePage.time($0.expiresAt)]
            }
        )
        return """
            <section aria-labelledby="account-heading">
            <h2 id="account-heading">Account <span class="mono">\(account.username)</span></h2>
            \(profile)
            </section>
            <section aria-labelledby="apple-heading">
            <h2 id="apple-heading">Sign in with Apple</h2>
            \(apple)
            \(transfer)
            \(earlierTransfers)
            </section>
            <section aria-labelledby="flows-heading">
            <h2 id="flows-heading">Open flows</h2>
            \(flows)
            </section>
            <section aria-labelledby="audit-heading">
            <h2 id="audit-heading">Audit trail</h2>
            \(events(overview.lastEvents))
            </section>
            \(deletionForm(username: account.username, csrf: csrf))
            """
    }

    /// The audit trail alone, for a token with `audit` but not `accounts`.
    static func auditTrail(username: String, _ list: [AuditEvent]) -> HTML {
        """
        <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Audit trail of <span class="mono">\(username)</span></h2>
        <p class="hint">This token has the audit scope but not accounts: the account's details and its deletion are not shown.</p>
        \(events(list))
        </section>
        """
    }

    /// Audit events, newest first, each with its details as `name=value`.
    static func events(_ events: [AuditEvent]) -> HTML {
        ConsolePage.table(
            caption: "Latest audit events, newest first",
            headers: ["Time", "Event", "Change", "Upgrade", "Details"],
            rows: events.map { event in
                let change = [event.fromStatus, event.toStatus].compactMap { $0 }.joined(separator: " → ")
                let details = event.detail.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                    separator: ", "
                )
                return [
                    ConsolePage.time(event.at), ConsolePage.mono(event.event),
                    ConsolePage.text(change.isEmpty ? nil : change),
                    ConsolePage.mono(event.upgradeID), ConsolePage.text(details.isEmpty ? nil : details),
                ]
            }
        )
    }

    /// Deletion, confirmed by typing the username (the server compares it).
    static func deletionForm(username: String, csrf: String) -> HTML {
        """
        <section aria-labelledby="delete-heading" class="error">
        <h2 id="delete-heading">Delete this account</h2>
        <p>Deletes the account, its credentials and personal data, keeps the audit trail, and revokes its Apple token. It cannot be undone.</p>
        <form method="post" action="/accounts/delete" class="stack">
        \(ConsolePage.csrfField(csrf))
        <input type="hidden" name="username" value="\(username)">
        <label for="confirm">Type the username <span class="mono">\(username)</span> to confirm</label>
        <input type="text" id="confirm" name="confirm" autocomplete="off" required>
        <button type="submit" class="danger">Delete account</button>
        </form>
        </section>
        """
    }

    static func deleted(username: String, _ deletion: AccountDeletion) -> HTML {
        let revocation = deletion.appleRevocation?.rawValue ?? "none"
        return ConsolePage.message("The account \(username) was deleted.")
            + ConsolePage.facts([
                ("Account id", ConsolePage.mono(deletion.accountID)),
                ("Apple revocation", ConsolePage.mono(revocation)),
            ]) + "<p><a href=\"/accounts\">Look another account up</a></p>"
    }

    /// Leases (live or expired at `now`) and the latest imports.
    static func jobs(_ jobs: AdminQueryService.BatchJobs, now: Int64) -> HTML {
        let leases = ConsolePage.table(
            caption: "Leases of batch jobs (transfer prepare, transfer complete)",
            headers: ["Job", "Holder", "State", "Acquired", "Last heartbeat", "Expires"],
            rows: jobs.leases.map { lease in
                [
                    ConsolePage.mono(lease.job), HTML(text: lease.holder),
                    lease.expiresAt > now ? "running" : "expired (free to take over)",
                    ConsolePage.time(lease.acquiredAt),
                    ConsolePage.time(lease.heartbeatAt), ConsolePage.time(lease.expiresAt),
                ]
            }
        )
        let imports = ConsolePage.table(
            caption: "Latest account imports",
            headers: [
                "Import", "Source", "Last line", "Created", "Updated", "Skipped", "Failed", "Started", "Finished",
            ],
            rows: jobs.importRuns.map { run in
                [
                    ConsolePage.mono(run.id), HTML(text: run.source), "\(run.lastLine)", "\(run.created)",
                    "\(run.updated)",
                    "\(run.skipped)", "\(run.failed)", ConsolePage.time(run.startedAt),
                    run.finishedAt.map(ConsolePage.time) ?? "not finished",
                ]
            },
            numeric: [2, 3, 4, 5, 6]
        )
        return """
            <section aria-labelledby="leases-heading"><h2 id="leases-heading">Leases</h2>\(leases)</section>
            <section aria-labelledby="imports-heading"><h2 id="imports-heading">Imports</h2>\(imports)</section>
            \(servers(jobs.instances, now: now))
            """
    }

    /// The running servers and their keyrings' ids; a note when they seal under different keys
    /// (a rotation under way, or an instance that missed its reload: docs/architecture.md §10.4).
    static func servers(_ instances: [ServeInstanceRecord], now: Int64) -> HTML {
        let table = ConsolePage.table(
            caption: "serve instances seen in the last \(RunningKeyrings.liveSeconds) s",
            headers: ["Host", "PID", "Listener", "Keyring (newest first)", "Started", "Last seen"],
            rows: instances.map { instance in
                [
                    HTML(text: instance.host), "\(instance.pid)", ConsolePage.mono(instance.listen),
                    ConsolePage.mono(instance.keyIDs.joined(separator: ", ")), ConsolePage.time(instance.startedAt),
                    HTML(text: "\(max(0, now - instance.seenAt)) s ago"),
                ]
            },
            numeric: [1]
        )
        let sealing = Set(instances.compactMap(\.keyIDs.first)).sorted()
        let note: HTML =
            sealing.count > 1
            ? """
            <p class="error" role="status">These servers seal under different keys (\(sealing.joined(separator: ", "))): \
            reload each with the same keyring before <code>upgrade-cli keys reseal</code>.</p>
            """
            : ""
        return """
            <section aria-labelledby="servers-heading"><h2 id="servers-heading">Servers</h2>\(note)\(table)</section>
            """
    }

    /// The outbox's counts, its failed events and, when `replayCSRF` is given, the replay form.
    static func webhooks(_ status: AdminQueryService.WebhookStatus, replayCSRF: String?) -> HTML {
        let stats = ConsolePage.stats(
            label: "Webhook outbox",
            [
                ("Pending", status.counts.pending), ("Delivered", status.counts.delivered),
                ("Failed", status.counts.failed),
            ]
        )
        let failed = ConsolePage.table(
            caption: "Failed events, most recent first",
            headers: ["Failed at", "Webhook id", "Type", "Account", "Attempts", "Last error"],
            rows: status.failed.map { event in
                [
                    ConsolePage.time(event.failedAt), ConsolePage.mono(event.id), ConsolePage.mono(event.type),
                    ConsolePage.mono(event.accountID), "\(event.attempts)", ConsolePage.text(event.lastError),
                ]
            },
            numeric: [4]
        )
        let retrying = ConsolePage.table(
            caption: "Pending events not delivered yet, the longest retried first",
            headers: ["First tried", "Webhook id", "Type", "Account", "Attempts", "Next attempt", "Last error"],
            rows: status.retrying.map { event in
                [
                    ConsolePage.time(event.firstAttemptAt), ConsolePage.mono(event.id), ConsolePage.mono(event.type),
                    ConsolePage.mono(event.accountID), "\(event.attempts)", ConsolePage.time(event.nextAttemptAt),
                    ConsolePage.text(event.lastError),
                ]
            },
            numeric: [4]
        )
        let replay: HTML =
            replayCSRF.map { csrf in
                """
                <section aria-labelledby="replay-heading">
                <h2 id="replay-heading">Replay</h2>
                <p>Sends every event created since the given time again, with the same webhook id, delivered or not.</p>
                <form method="post" action="/webhooks/replay" class="inline">
                \(ConsolePage.csrfField(csrf))
                <div class="field"><label for="since">Since (RFC 3339 or Unix seconds)</label>
                <input type="text" id="since" name="since" placeholder="2026-11-24T10:00:00Z" autocomplete="off" required></div>
                <button type="submit">Replay</button>
                </form>
                </section>
                """
            } ?? "<p class=\"hint\">Replaying needs a token with the accounts scope too.</p>"
        return """
            <section aria-labelledby="outbox-heading">
            <h2 id="outbox-heading">Outbox</h2>
            \(stats)
            \(ConsolePage.facts([("Oldest pending", ConsolePage.time(status.counts.oldestPendingAt))]))
            </section>
            <section aria-labelledby="retrying-heading"><h2 id="retrying-heading">Retrying</h2>\(retrying)</section>
            <section aria-labelledby="failed-heading"><h2 id="failed-heading">Failed</h2>\(failed)</section>
            \(replay)
            """
    }

    static func replayed(_ count: Int, since: Int64) -> HTML {
        ConsolePage.message(
            "\(count) webhook event(s) created since \(RFC3339.utc(seconds: since)) are pending again; the server sends them in order."
        ) + "<p><a href=\"/webhooks\">Back to the outbox</a></p>"
    }

    /// Pending Apple revocations, soonest due first; never the sealed token.
    static func revocations(_ pending: AdminQueryService.PendingRevocations) -> HTML {
        let stats = ConsolePage.stats(label: "Apple revocations", [("Pending", pending.count)])
        let list = ConsolePage.table(
            caption: "Pending revocations, soonest due first (at most \(AdminQueryService.operationsListLimit))",
            headers: ["Revocation", "Deleted account", "Client", "Queued", "Attempts", "Next attempt", "Last error"],
            rows: pending.first.map { row in
                [
                    ConsolePage.mono(row.id), ConsolePage.mono(row.accountID), ConsolePage.mono(row.clientID),
                    ConsolePage.time(row.createdAt), "\(row.attempts)", ConsolePage.time(row.nextAttemptAt),
                    ConsolePage.text(row.lastError),
                ]
            },
            numeric: [4]
        )
        return """
            <section aria-labelledby="revocations-heading">
            <h2 id="revocations-heading">Queue</h2>
            \(stats)
            \(list)
            </section>
            """
    }
}
