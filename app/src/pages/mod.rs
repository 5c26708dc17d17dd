pub mod admin;
pub mod approve;
pub mod bulk;
pub mod home;
pub mod login;
pub mod operations;
pub mod proposal;
pub mod queue;
