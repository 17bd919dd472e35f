// Package online checks a stream of black-box transactions online, in
// batches as they arrive, at serializability, snapshot isolation and read
// committed: list-append histories and read/write registers with unique
// values. Add takes a batch and returns the findings that became certain
// with it; Drain ends the stream and gives the final verdict, the offline
// checker's (package check) on the whole history.
package online
