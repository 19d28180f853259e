import Testing

@testable import PushTracking

@Suite("Delivery ids the planner could have issued: positive 32-bit decimal integers, written as it writes them")
struct IssuedDeliveryIdTests {
    @Test("ids in the planner's form are read", arguments: [("1", 1), ("42", 42), ("2147483647", Int32.max)] as [(String, Int32)])
    func issuable(text: String, id: Int32) {
        #expect(IssuedDeliveries.issuable(text) == id)
    }

    @Test(
        "anything else is never issued, without asking the database",
        arguments: ["testDeliveryId", "deliveryId", "0", "007", "+42", "-42", "2147483648", "1e3", " 42", "42 ", "", "٤٢"])
    func neverIssued(text: String) {
        #expect(IssuedDeliveries.issuable(text) == nil)
    }
}
