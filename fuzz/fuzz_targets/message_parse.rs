//! The JSON-RPC message parser: `Message::from_slice` on arbitrary bytes.
//! A parsed message must serialise and parse back to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolwire_protocol::Message;

fuzz_target!(|data: &[u8]| {
    match Message::from_slice(data) {
        Ok(message) => {
            let _ = message.method();
            let value = serde_json::to_value(&message).expect("a parsed message serialises");
            let bytes = serde_json::to_vec(&value).expect("a value serialises");
            let again = Message::from_slice(&bytes).expect("a serialised message parses again");
            assert_eq!(
                value,
                serde_json::to_value(&again).unwrap(),
                "round trip changed the message"
            );
            let from_value = Message::from_value(value.clone()).expect("from_value agrees");
            assert_eq!(value, serde_json::to_value(&from_value).unwrap());
        }
        Err(error) => {
            let _ = error.id();
            let _ = error.to_error_object();
            let response = error.to_response();
            let _ = serde_json::to_vec(&response).expect("an error response serialises");
        }
    }
});
