extension UpgradeService {
    /// `POST /v1/upgrades/{id}/cancel`: the extension called `cancelRequest(withError:)`. Cancelling a
    /// cancelled upgrade again answers the same and changes nothing. An upgrade that already ended
    /// otherwise (completed, failed, expired) cannot be cancelled: `not-allowed-in-state`, naming how
    /// it ended.
    public func cancel(id: String, reason: ASExtensionErrorCode, now: Int64) throws(ServiceFailure) -> UpgradeAnswer {
        let loaded = try loadSettled(id, now: now)
        if loaded.interruptedNow { throw failure(for: loaded.machine, id: id, problem: nil) }
        let record = loaded.record
        var machine = loaded.machine
        let event: UpgradeEvent
        switch machine.admission(of: .cancel, now: now) {
        case .replay:
            // The extension re-cancels after the user dismisses Apple's sheet: the same answer again.
            return answer(machine, id: id)
        case .lapsed:
            event = .deadlinePassed
        case .proceed:
            event = .cancel(reason: reason)
        case .refused(let refusal):
            guard machine.status == .failed || machine.status == .expired else {
                throw failure(for: refusal, machine: machine, id: id)
            }
            let ended = failure(for: machine, id: id, problem: nil)
            throw ServiceFailure(
                .notAllowedInState,
                Self.alreadyEnded(machine.status.rawValue, ended.message, what: " and cannot be cancelled"),
                upgradeID: id,
                status: machine.status
            )
        case .inProgress:
            throw failure(for: .notAllowed(state: machine.status.rawValue, event: "cancel"), machine: machine, id: id)
        }
        let committed = try commit(event, detail: ["reason": reason.name], record: record, machine: &machine, now: now)
        if let problem = committed.transition.problem {
            throw failure(for: machine, id: id, problem: problem)
        }
        var answer = self.answer(machine, id: id)
        answer.result = .failure
        return answer
    }

    /// `GET /v1/upgrades/{id}`: status, how a failed upgrade ended, and the transition history. An
    /// open upgrade past its deadline reads as `expired` even before an event has persisted that.
    public func view(id: String, now: Int64) throws(ServiceFailure) -> UpgradeView {
        // A lapsed conversion is failed here too, so the view and the next call agree.
        let loaded = try loadSettled(id, now: now)
        let record = loaded.record
        let machine = loaded.machine
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
            problem: status == .expired ? .upgradeExpired : machine.state.problem,
            expiresAt: machine.deadline,
            createdAt: record.createdAt,
            history: trail.map {
                UpgradeView.Transition(
                    at: $0.at,
                    event: $0.event,
                    from: $0.fromStatus,
                    to: $0.toStatus,
                    problem: $0.detail["problem"].flatMap(UpgradeFailureReason.init(rawValue:))
                )
            }
        )
    }
}
