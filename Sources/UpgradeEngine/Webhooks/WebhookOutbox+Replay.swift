extension WebhookOutbox {
    /// Makes every event created at or after `since` pending again (same `webhook-id`, delivered
    /// or not), in one write; `serve` then sends them in order. Returns how many. What
    /// `upgrade-cli webhooks replay` and the support console's replay do.
    public static func replay(since: Int64, now: Int64, store: any UpgradeStore) throws(ServiceFailure) -> Int {
        do {
            return try store.write { tx in try tx.replayWebhookEvents(since: since, now: now) }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }
}
