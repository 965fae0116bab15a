extension UpgradeService {
    /// `POST /v1/upgrades/{id}/cancel`: the extension called `cancelRequest(withError:)`. Cancelling a
    /// cancelled upgrade again answers the same and changes nothing.
    public func cancel(id: String, reason: ASExtensionErrorCode, now: Int64) throws(UpgradeFailure) -> UpgradeAnswer {
        let record = try load(id)
        var machine = try restore(record)
        let event: UpgradeEvent = machine.hasExpired(now: now) ? .deadlinePassed : .cancel(reason: reason)
        let transition: UpgradeTransition
        do {
            var probe = machine
            transition = try probe.apply(event, now: now)
        } catch {
            throw failure(for: error, machine: machine, id: id)
        }
        if transition.isReplay {
            return answer(machine, id: id)
        }
        let committed = try commit(event, detail: ["reason": reason.name], record: record, machine: &machine, now: now)
        if let problem = committed.transition.problem {
            throw failure(for: machine, id: id, problem: problem)
        }
        var answer = self.answer(machine, id: id)
        answer.result = .failure
        return answer
    }

    /// `GET /v1/upgrades/{id}`: status and transition history. An open upgrade past its deadline reads
    /// as `expired` even before an event has persisted that.
    public func view(id: String, now: Int64) throws(UpgradeFailure) -> UpgradeView {
        let record = try load(id)
        let machine = try restore(record)
        let trail: [AuditEvent]
        do {
            trail = try store.read { try $0.auditTrail(upgradeID: id, limit: 200) }
        } catch {
            throw Self.storageFailure(error)
        }
        let status = machine.status(now: now)
        return UpgradeView(
            id: id,
            status: status,
            result: status == .expired ? .failure : machine.result,
            expiresAt: machine.deadline,
            createdAt: record.createdAt,
            history: trail.map {
                UpgradeView.Transition(
                    at: $0.at,
                    event: $0.event,
                    from: $0.fromStatus,
                    to: $0.toStatus,
                    problem: $0.detail["problem"]
                )
            }
        )
    }
}
