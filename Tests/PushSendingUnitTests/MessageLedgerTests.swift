import Foundation
import Testing

@testable import PushSending

@Suite("MessageLedger: twins of held and lately finished messages")
struct MessageLedgerTests {
    @Test("a held message's twin is refused; once its outcome is decided as a retry, its retry record is admitted")
    func heldThenRetried() {
        var ledger = MessageLedger()
        let id = UUID()
        let first = ledger.admit(id)
        let twin = ledger.admit(id)
        ledger.decided(id, final: false)
        let retry = ledger.admit(id)
        #expect(first)
        #expect(!twin, "a twin while the first is held")
        #expect(retry, "the retry record the decision wrote")
        #expect(ledger.activeCount == 1)
    }

    @Test("a final outcome is remembered for the last `capacity` messages, the oldest forgotten first")
    func finalsAreBounded() {
        var ledger = MessageLedger(capacity: 3)
        let ids = (0..<5).map { _ in UUID() }
        for id in ids {
            let admitted = ledger.admit(id)
            #expect(admitted)
            ledger.decided(id, final: true)
        }
        #expect(ledger.finalCount == 3)
        #expect(ledger.activeCount == 0)
        let again = ids.map { ledger.admit($0) }
        #expect(again == [true, true, false, false, false], "the two oldest forgotten, the three latest remembered")
    }
}
