package policy

import "github.com/usherhq/usher/acl"

// Decide answers whether sub may perform action on queue of partition.
// The error is non-nil only for an unknown partition or queue; the
// decision then denies.
func (s *Snapshot) Decide(partition, queue string, sub *acl.Subject, action Action) (Decision, error) {
	p, err := s.Partition(partition)
	if err != nil {
		return Decision{Partition: partition, Queue: queue, Action: action, User: sub.User()}, err
	}
	return p.Decide(queue, sub, action)
}
